"""A request line with invalid UTF-8 in a string is a message all the same:
the client waits for an answer, so it gets -32700 with its id and the reason
("string contains invalid UTF-8"); the id itself unreadable → id null; a
notification gets no reply; bytes that make the line no JSON at all are
still ignored; the gateway keeps serving. Written as the attack: each of
these used to get no reply at all. The waits only stop a hung test."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import Gateway  # noqa: E402

WAIT = 30

BAD = {
    31: b"\xff",               # never valid
    32: b"\xc0\xaf",           # overlong '/'
    33: b"\xed\xa0\x80",       # an encoded surrogate
    34: b"\xe2\x82",           # cut short
    35: b"\xf4\x90\x80\x80",   # past U+10FFFF
}


def raw(g, data):
    g.proc.stdin.write(data + b"\n")
    g.proc.stdin.flush()


def parse_error(r, rid):
    return (r is not None and r.get("id") == rid and r.get("error", {}).get("code") == -32700
            and "invalid UTF-8" in r["error"].get("message", ""))


def main():
    with Sandbox() as sb:
        with Gateway(sb) as g:
            check(g.initialize() is not None, "initialize answered")
            for rid, bad in BAD.items():
                raw(g, b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":'
                       b'"tools_search","arguments":{"query":"a%sb"}}}' % (rid, bad))
            raw(g, b'{"jsonrpc":"2.0","id":36,"method":"ping","params":{"k\xffey":1}}')
            for rid in list(BAD) + [36]:
                r = g.wait(rid, WAIT)
                check(parse_error(r, rid),
                      f"id {rid}: invalid UTF-8 in a string gets -32700 naming it", r)
            raw(g, b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}')
            r = g.wait(None, WAIT)
            check(parse_error(r, None), "an unreadable id: -32700 with id null", r)
            raw(g, b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"\xff"}}')
            raw(g, b'\xff\xfe not JSON at all')
            r = g.request("ping", timeout=WAIT)
            check(r is not None and "result" in r, "the gateway keeps serving", r)
            check("null" not in g.replies,
                  "no reply to the notification or to a line that is not JSON",
                  g.replies.get("null"))
            rc = g.close()
            check(rc == 0, "clean exit", rc)
            err = g.stderr()
            check("answered an unreadable message from the client: string contains invalid "
                  "UTF-8" in err, "stderr says what was answered", err[-600:])
    done()


if __name__ == "__main__":
    main()
