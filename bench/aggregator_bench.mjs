// The measuring half of bench/aggregator_bench.sh: echo calls from the
// official TypeScript SDK client (@modelcontextprotocol/sdk) through an MCP
// aggregator — agentstack's gateway over stdio, mcp-hub over its HTTP
// endpoint — and straight to the upstream, with the peak RSS of each
// aggregator's process tree.
//
//   AS_INTEROP_NM=<cache>/node_modules node aggregator_bench.mjs '<spec json>'
//
// spec: {"n", "warmup", "rounds", "window", "targets": [target…]}
// target: {"label", "tool", "upstream" (a substring of the upstream server's
//          command line: those processes are not the aggregator's), and
//          either "command"/"args"/"cwd" (stdio: the SDK spawns it) or
//          "start" {"command","args","cwd"} plus "url" and "transport"
//          ("sse" or "http"): the aggregator is spawned here, its endpoint
//          polled until the tool is listed, then the SDK connects to url}.
// Each round runs every target in turn, each in a fresh process: spawn,
// initialize, warm-up calls, n sequential calls (each awaited), then n calls
// with `window` outstanding at once (a new one sent as each answer arrives;
// the SDK gives each its own id, so over stdio they are pipelined on one
// pipe), every answer checked. Then VmHWM of every process in the
// aggregator's tree is read (before it is closed): "aggKiB" sums those that
// are not the upstream, "upKiB" those that are.
// Prints one JSON object: {"<label>": [{"seq": {...}, "win": {...},
// "aggKiB", "upKiB", "procs"}, … one per round]}, where seq/win are
// {"callsPerSec","meanUs","p50Us","p99Us"}.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const nm = process.env.AS_INTEROP_NM;
if (!nm) {
    process.stderr.write("aggregator_bench: set AS_INTEROP_NM to the cache's node_modules\n");
    process.exit(2);
}
const sdk = (p) => import(pathToFileURL(path.join(nm, "@modelcontextprotocol/sdk/dist/esm", p)));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { SSEClientTransport } = await sdk("client/sse.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

const spec = JSON.parse(process.argv[2]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every descendant of pid (pid included), from /proc/<p>/stat's ppid field.
function tree(pid) {
    const kids = new Map();
    for (const d of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(d)) continue;
        try {
            const st = fs.readFileSync(`/proc/${d}/stat`, "utf8");
            const ppid = Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]);
            if (!kids.has(ppid)) kids.set(ppid, []);
            kids.get(ppid).push(Number(d));
        } catch {
            // the process exited while we looked
        }
    }
    const out = [];
    const todo = [pid];
    while (todo.length) {
        const p = todo.pop();
        out.push(p);
        todo.push(...(kids.get(p) ?? []));
    }
    return out;
}

function rss(pid, upstream) {
    let agg = 0;
    let up = 0;
    const procs = [];
    for (const p of tree(pid)) {
        try {
            const status = fs.readFileSync(`/proc/${p}/status`, "utf8");
            const kib = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
            const cmd = fs.readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0").join(" ");
            const isUp = cmd.includes(upstream);
            if (isUp) up += kib;
            else agg += kib;
            procs.push(`${path.basename(cmd.split(" ")[0])}${isUp ? "(upstream)" : ""} ${kib}`);
        } catch {
            // gone
        }
    }
    return { aggKiB: agg, upKiB: up, procs };
}

function stats(samples, total) {
    samples.sort();
    const n = samples.length;
    const us = (ms) => Math.round(ms * 1000);
    return {
        callsPerSec: Math.round(n / (total / 1000)),
        meanUs: us(total / n),
        p50Us: us(samples[Math.floor(n * 0.5)]),
        p99Us: us(samples[Math.min(n - 1, Math.floor(n * 0.99))]),
    };
}

async function startServer(t) {
    const child = spawn(t.start.command, t.start.args, {
        cwd: t.start.cwd,
        env: { ...process.env },
        stdio: ["ignore", "ignore", "ignore"],
    });
    // Poll until the endpoint answers and lists the tool (the aggregator
    // starts its upstreams in the background after it listens).
    const deadline = performance.now() + 120000;
    for (;;) {
        if (child.exitCode !== null) throw new Error(`${t.label}: exited ${child.exitCode}`);
        try {
            const c = await connect(t);
            const { tools } = await c.listTools();
            await c.close();
            if (tools.some((x) => x.name === t.tool)) return child;
        } catch {
            // not listening yet
        }
        if (performance.now() > deadline) {
            child.kill("SIGKILL");
            throw new Error(`${t.label}: ${t.tool} not listed within 120 s`);
        }
        await sleep(200);
    }
}

async function connect(t) {
    const transport = t.url
        ? t.transport === "sse"
            ? new SSEClientTransport(new URL(t.url))
            : new StreamableHTTPClientTransport(new URL(t.url))
        : new StdioClientTransport({
              command: t.command,
              args: t.args,
              cwd: t.cwd,
              env: { ...process.env },
              stderr: "ignore",
          });
    const client = new Client({ name: "agentstack-bench", version: "1.0.0" });
    await client.connect(transport);
    client.benchPid = () => transport.pid;
    return client;
}

async function session(t) {
    const server = t.start ? await startServer(t) : null;
    const client = await connect(t);
    const call = async (i) => {
        const msg = `bench ${i}`;
        const t0 = performance.now();
        const r = await client.callTool({ name: t.tool, arguments: { message: msg } });
        if (r.isError || r.content?.[0]?.text !== `Echo: ${msg}`) {
            throw new Error(`${t.label}: unexpected answer ${JSON.stringify(r).slice(0, 300)}`);
        }
        return performance.now() - t0;
    };
    for (let i = 0; i < spec.warmup; i++) await call(i);
    const seq = new Float64Array(spec.n);
    let start = performance.now();
    for (let i = 0; i < spec.n; i++) seq[i] = await call(i);
    const seqStats = stats(seq, performance.now() - start);
    // `window` calls in flight: each lane sends its next call when its
    // previous answer arrives, until n calls have been sent in all.
    const win = new Float64Array(spec.n);
    let next = 0;
    const lane = async () => {
        while (next < spec.n) {
            const i = next++;
            win[i] = await call(i);
        }
    };
    start = performance.now();
    await Promise.all(Array.from({ length: spec.window }, lane));
    const winStats = stats(win, performance.now() - start);
    const pid = server ? server.pid : client.benchPid();
    const mem = rss(pid, t.upstream);
    await client.close();
    if (server) {
        server.kill("SIGTERM");
        await new Promise((r) => (server.exitCode !== null ? r() : server.on("exit", r)));
    }
    return { seq: seqStats, win: winStats, ...mem };
}

const out = {};
for (let r = 0; r < spec.rounds; r++) {
    for (const t of spec.targets) {
        (out[t.label] ??= []).push(await session(t));
    }
}
// An SSE client's stream can keep the event loop alive after close: exit.
process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
