// One MCP session driven by the official TypeScript SDK client
// (@modelcontextprotocol/sdk: Client + StdioClientTransport), for the
// gateway interop tests. The Python test says what to do; this script does
// it with the real client library and prints what came back, so the checks
// (and the "N passed, N failed" line) stay in the test.
//
//   AS_INTEROP_NM=<cache>/node_modules node sdk_session.mjs '<spec json>'
//
// spec: {"command", "args", "cwd"?  |  "url" (Streamable HTTP instead of stdio) with
//        "headers"? (sent on every request) and "terminate"? (DELETE the session at the end;
//        the report then carries "sessionId"),
//        "version"?, "steps": [{"op": "list"} | {"op": "call", "name", "arguments"?}
//          | {"op": "ping"} | {"op": "callMany", "name", "arguments": [{…}, …]}]}
// callMany sends its calls at once and waits for all of them (concurrency).
// "version" makes the client offer that revision in `initialize` instead of
// the SDK's latest (the SDK has no option for it, so the outgoing frame is
// rewritten; the SDK still checks the answer against what it supports).
// Prints {"protocolVersion","serverInfo","capabilities","instructions",
// "steps":[{op,name?,result|error}],"notifications":[…],"stderr"} on stdout.
import path from "node:path";
import { pathToFileURL } from "node:url";

const nm = process.env.AS_INTEROP_NM;
if (!nm) {
    process.stderr.write("sdk_session: set AS_INTEROP_NM to the cache's node_modules\n");
    process.exit(2);
}
const sdk = (p) => import(pathToFileURL(path.join(nm, "@modelcontextprotocol/sdk/dist/esm", p)));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

const spec = JSON.parse(process.argv[2]);
const transport = spec.url
    ? new StreamableHTTPClientTransport(new URL(spec.url),
                                        { requestInit: { headers: spec.headers ?? {} } })
    : new StdioClientTransport({
        command: spec.command,
        args: spec.args,
        cwd: spec.cwd,
        env: { ...process.env }, // the SDK's default keeps only PATH/HOME/…
        stderr: "pipe",
    });
let stderr = "";
transport.stderr?.on("data", (d) => {
    stderr += d.toString("utf8");
});

let negotiated = null;
const notifications = [];
// Wrap the transport's callbacks the SDK installs in connect(): record the
// negotiated revision and every notification, and offer spec.version.
const origSend = transport.send.bind(transport);
transport.send = (msg, opts) => {
    if (spec.version && msg.method === "initialize") {
        msg = { ...msg, params: { ...msg.params, protocolVersion: spec.version } };
    }
    return origSend(msg, opts);
};
let handler = null;
Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get() {
        return handler && ((msg, extra) => {
            if (msg.result && typeof msg.result.protocolVersion === "string" && !negotiated) {
                negotiated = msg.result.protocolVersion;
            }
            if (msg.method && !("id" in msg)) notifications.push(msg);
            return handler(msg, extra);
        });
    },
    set(h) {
        handler = h;
    },
});

const client = new Client({ name: "agentstack-interop", version: "1.0.0" },
                          { capabilities: {} });
const out = { steps: [], notifications };
try {
    await client.connect(transport);
    out.protocolVersion = negotiated;
    out.serverInfo = client.getServerVersion();
    out.capabilities = client.getServerCapabilities();
    out.instructions = client.getInstructions() ?? null;
    for (const step of spec.steps) {
        const rec = { op: step.op, name: step.name };
        try {
            if (step.op === "list") {
                rec.result = await client.listTools();
            } else if (step.op === "call") {
                rec.result = await client.callTool({ name: step.name,
                                                     arguments: step.arguments ?? {} });
            } else if (step.op === "callMany") {
                rec.result = await Promise.all(step.arguments.map((a) =>
                    client.callTool({ name: step.name, arguments: a })));
            } else if (step.op === "ping") {
                rec.result = await client.ping();
            } else {
                throw new Error(`unknown op ${step.op}`);
            }
        } catch (e) {
            rec.error = { message: String(e.message ?? e), code: e.code ?? null };
        }
        out.steps.push(rec);
    }
    if (spec.url && spec.terminate) {
        out.sessionId = transport.sessionId ?? null;
        await transport.terminateSession();
        out.terminated = transport.sessionId === undefined;
    }
} catch (e) {
    out.connectError = String(e.message ?? e);
} finally {
    const drained = new Promise((resolve) => {
        if (!transport.stderr || transport.stderr.readableEnded) resolve();
        transport.stderr?.once("end", resolve);
        transport.stderr?.once("close", resolve);
    });
    await client.close().catch(() => {});
    // the whole stderr, up to the child's exit (a hung pipe only stops waiting)
    await Promise.race([drained, new Promise((r) => setTimeout(r, 10000).unref())]);
    out.stderr = stderr.slice(-4000);
}
process.stdout.write(JSON.stringify(out) + "\n");
