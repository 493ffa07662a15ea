// Validates every message an MCP server sent, as recorded by tee_shim.mjs,
// against the official JSON schema of the protocol revision in force for it.
//
//   node validate_frames.mjs SCHEMA_ROOT LOG…
//
// SCHEMA_ROOT holds <version>/schema.json. For each LOG the revision is the
// one the server answered `initialize` with; a request whose
// params._meta["io.modelcontextprotocol/protocolVersion"] names a revision
// (the stateless era) has its reply checked against that revision instead.
// Each server message is checked twice: the envelope against JSONRPCMessage,
// and the payload against the type its method calls for (InitializeResult,
// ListToolsResult, CallToolResult, …; ServerNotification, ServerRequest,
// the error response type). Prints one JSON report on stdout:
//   {"logs":[{"log","versions":{v:n},"checked":n,"unparsable":n,
//             "errors":[{"version","def","frame","problems"}]}]}
// and exits 0 when nothing failed, 1 when something did, 2 on bad usage.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

// ajv lives in the interop cache, not next to this script: resolve it there.
const cache = process.env.AS_INTEROP_NM;
if (!cache) {
    process.stderr.write("validate_frames: set AS_INTEROP_NM to the cache's node_modules\n");
    process.exit(2);
}
const req = createRequire(path.join(cache, "noop.js"));
const Ajv = req("ajv").default;
const Ajv2020 = req("ajv/dist/2020").default;
const addFormats = req("ajv-formats").default;

const META_VERSION = "io.modelcontextprotocol/protocolVersion";
const [root, ...logs] = process.argv.slice(2);
if (!root || logs.length === 0) {
    process.stderr.write("usage: node validate_frames.mjs SCHEMA_ROOT LOG…\n");
    process.exit(2);
}

const validators = new Map();
function validator(version) {
    if (validators.has(version)) return validators.get(version);
    const schema = JSON.parse(readFileSync(path.join(root, version, "schema.json"), "utf8"));
    const modern = String(schema.$schema || "").includes("2020-12");
    const ajv = modern ? new Ajv2020({ strict: false, allErrors: true })
                       : new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    const key = "mcp-" + version;
    ajv.addSchema(schema, key);
    const defs = schema.$defs ? "$defs" : "definitions";
    const names = new Set(Object.keys(schema[defs]));
    const compiled = new Map();
    const v = {
        has: (name) => names.has(name),
        check(name, value) {
            if (!compiled.has(name)) compiled.set(name, ajv.getSchema(`${key}#/${defs}/${name}`));
            const fn = compiled.get(name);
            if (!fn) return [`no definition ${name}`];
            if (fn(value)) return [];
            return fn.errors.slice(0, 8).map((e) =>
                `${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`);
        },
    };
    validators.set(version, v);
    return v;
}

const RESULT_DEF = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "server/discover": "DiscoverResult",
    "prompts/list": "ListPromptsResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
};

// The definitions one server message must satisfy, most specific last.
function defsFor(v, msg, method) {
    const out = ["JSONRPCMessage"];
    if ("result" in msg) {
        const r = RESULT_DEF[method];
        // 2026-07-28 names whole responses (…ResultResponse) as well as results
        if (r && v.has(r + "Response")) out.push(r + "Response");
        else if (v.has("JSONRPCResultResponse")) out.push("JSONRPCResultResponse");
        else out.push("JSONRPCResponse");
        if (r) out.push(["result", r]);
    } else if ("error" in msg) {
        out.push(v.has("JSONRPCErrorResponse") ? "JSONRPCErrorResponse" : "JSONRPCError");
    } else if ("id" in msg) {
        out.push("JSONRPCRequest", "ServerRequest");
    } else {
        out.push("JSONRPCNotification", "ServerNotification");
    }
    return out;
}

const report = { logs: [] };
let failed = false;
for (const log of logs) {
    const entry = { log, versions: {}, checked: 0, unparsable: 0, errors: [] };
    report.logs.push(entry);
    let frames;
    try {
        frames = readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    } catch (e) {
        entry.errors.push({ version: null, def: "-", frame: "", problems: [String(e.message)] });
        failed = true;
        continue;
    }
    const requests = new Map(); // JSON id → {method, version?}
    let session = null;
    const pending = [];
    for (const f of frames) {
        let msg;
        try {
            msg = JSON.parse(f.line);
        } catch {
            if (f.dir === "s2c" && f.line.trim() !== "") {
                entry.unparsable++;
                entry.errors.push({ version: null, def: "JSON", frame: f.line.slice(0, 300),
                                    problems: ["not JSON"] });
            }
            continue;
        }
        if (f.dir === "c2s") {
            if (msg && typeof msg === "object" && "method" in msg && "id" in msg) {
                const meta = msg.params && msg.params._meta;
                requests.set(JSON.stringify(msg.id), {
                    method: msg.method,
                    version: meta && typeof meta[META_VERSION] === "string" ? meta[META_VERSION]
                                                                          : null,
                });
            }
            continue;
        }
        const req0 = "id" in msg && !("method" in msg) ? requests.get(JSON.stringify(msg.id))
                                                      : null;
        if (req0 && req0.method === "initialize" && msg.result && msg.result.protocolVersion) {
            session = msg.result.protocolVersion;
        }
        pending.push({ msg, line: f.line, req: req0 });
    }
    // a log with no initialize (stateless only) falls back to the first
    // revision its requests named that we hold a schema for
    let fallback = session;
    for (const r of requests.values()) {
        if (!fallback && r.version && tryVersion(r.version)) fallback = r.version;
    }
    for (const { msg, line, req: r } of pending) {
        // a stateless request's reply is judged by the revision it asked for;
        // a revision we hold no schema for (an error reply) by the fallback
        const version = (r && r.version && tryVersion(r.version)) || fallback;
        if (!version || !tryVersion(version)) {
            entry.errors.push({ version, def: "-", frame: line.slice(0, 300),
                                problems: ["no negotiated revision to check against"] });
            continue;
        }
        const v = validator(version);
        entry.versions[version] = (entry.versions[version] || 0) + 1;
        entry.checked++;
        for (const d of defsFor(v, msg, r ? r.method : null)) {
            const [name, value] = Array.isArray(d) ? [d[1], msg.result] : [d, msg];
            const problems = v.check(name, value);
            if (problems.length) {
                entry.errors.push({ version, def: name, frame: line.slice(0, 600), problems });
            }
        }
    }
    if (entry.errors.length || entry.checked === 0) failed = true;
}

function tryVersion(v) {
    try {
        readFileSync(path.join(root, v, "schema.json"));
        return v;
    } catch {
        return null;
    }
}

process.stdout.write(JSON.stringify(report) + "\n");
process.exit(failed ? 1 : 0);
