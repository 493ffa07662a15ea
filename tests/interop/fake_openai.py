"""A stand-in for an OpenAI-compatible chat endpoint on 127.0.0.1, for
test_cline_cli.py (python3 stdlib only; not a test itself).

    python3 fake_openai.py PORT LOG

Appends every POSTed request body to LOG (one JSON line each) and answers
each chat completion with the one word "done" and no tool call, streamed when
the request asks for a stream; GET /v1/models lists one model. The Cline CLI
sends the tools it loaded — its own and each MCP server's — with the request,
so LOG shows which servers it parsed and connected without a real model.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-model"


def chunk(delta, finish):
    c = {"id": "c1", "object": "chat.completion.chunk", "model": MODEL,
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if finish:
        c["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    return b"data: " + json.dumps(c).encode() + b"\n\n"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, ctype, body):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply("application/json",
                   json.dumps({"data": [{"id": MODEL, "object": "model"}]}).encode())

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        req = json.loads(raw or b"{}")
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"path": self.path, "body": req}) + "\n")
        if not req.get("stream"):
            self.reply("application/json", json.dumps({
                "id": "c1", "object": "chat.completion", "model": MODEL,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "done"}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                          "total_tokens": 2}}).encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(chunk({"role": "assistant", "content": "done"}, None))
        self.wfile.write(chunk({}, "stop"))
        self.wfile.write(b"data: [DONE]\n\n")


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
