// Sequential echo calls from the official TypeScript SDK client
// (@modelcontextprotocol/sdk Client + StdioClientTransport), timed one by one:
// the measuring half of bench/interop_bench.sh.
//
//   AS_INTEROP_NM=<cache>/node_modules node sdk_bench.mjs '<spec json>'
//
// spec: {"n", "warmup", "rounds", "targets": [{"label", "command", "args",
//        "cwd"?, "tool"}]}
// Each round runs every target in turn (a fresh session each: spawn,
// initialize, warm-up calls, then n timed calls, each result checked), so
// the targets see the same machine conditions. Prints one JSON object:
// {"<label>": [{"callsPerSec","meanUs","p50Us","p99Us"}, … one per round]}.
import path from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const nm = process.env.AS_INTEROP_NM;
if (!nm) {
    process.stderr.write("sdk_bench: set AS_INTEROP_NM to the cache's node_modules\n");
    process.exit(2);
}
const sdk = (p) => import(pathToFileURL(path.join(nm, "@modelcontextprotocol/sdk/dist/esm", p)));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const spec = JSON.parse(process.argv[2]);

async function session(t) {
    const transport = new StdioClientTransport({
        command: t.command,
        args: t.args,
        cwd: t.cwd,
        env: { ...process.env },
        stderr: "ignore",
    });
    const client = new Client({ name: "agentstack-bench", version: "1.0.0" });
    await client.connect(transport);
    const call = async (i) => {
        const msg = `bench ${i}`;
        const r = await client.callTool({ name: t.tool, arguments: { message: msg } });
        if (r.isError || r.content?.[0]?.text !== `Echo: ${msg}`) {
            throw new Error(`${t.label}: unexpected answer ${JSON.stringify(r).slice(0, 300)}`);
        }
    };
    for (let i = 0; i < spec.warmup; i++) await call(i);
    const samples = new Float64Array(spec.n);
    const start = performance.now();
    for (let i = 0; i < spec.n; i++) {
        const t0 = performance.now();
        await call(i);
        samples[i] = performance.now() - t0;
    }
    const total = performance.now() - start;
    await client.close();
    samples.sort();
    const us = (ms) => Math.round(ms * 1000);
    return {
        callsPerSec: Math.round(spec.n / (total / 1000)),
        meanUs: us(total / spec.n),
        p50Us: us(samples[Math.floor(spec.n * 0.5)]),
        p99Us: us(samples[Math.min(spec.n - 1, Math.floor(spec.n * 0.99))]),
    };
}

const out = {};
for (let r = 0; r < spec.rounds; r++) {
    for (const t of spec.targets) {
        (out[t.label] ??= []).push(await session(t));
    }
}
process.stdout.write(JSON.stringify(out) + "\n");
