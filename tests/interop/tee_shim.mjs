// A transparent stdio shim for MCP interop tests: runs CMD with the shim's
// stdin and stdout piped through, and appends every line in both directions
// to LOG as one JSON object per line, {"dir":"c2s"|"s2c","line":"<raw>"}.
// Raw lines, not parsed messages, so the schema check sees exactly the bytes
// the gateway wrote, including anything a client library would drop.
//
//   node tee_shim.mjs LOG CMD [ARGS…]
//
// (no "--" before CMD: the Inspector CLI would read it as the end of its own
// options and miss the --method that follows the target)
//
// The child's stderr is passed through untouched; the shim exits with the
// child's status (128+signal when it was killed), and forwards SIGTERM/SIGINT.
import { spawn } from "node:child_process";
import { openSync, writeSync } from "node:fs";

const argv = process.argv.slice(2);
if (argv.length < 2) {
    process.stderr.write("usage: node tee_shim.mjs LOG CMD [ARGS…]\n");
    process.exit(2);
}
const log = openSync(argv[0], "a", 0o600);
const child = spawn(argv[1], argv.slice(2), { stdio: ["pipe", "pipe", "inherit"] });

function record(dir, line) {
    writeSync(log, JSON.stringify({ dir, line }) + "\n");
}

// Splits a byte stream into lines without losing a partial last line.
function lineTap(dir) {
    let pending = Buffer.alloc(0);
    return {
        push(chunk) {
            pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
            let nl;
            while ((nl = pending.indexOf(10)) >= 0) {
                record(dir, pending.subarray(0, nl).toString("utf8"));
                pending = pending.subarray(nl + 1);
            }
        },
        end() {
            if (pending.length) record(dir, pending.toString("utf8"));
            pending = Buffer.alloc(0);
        },
    };
}

const up = lineTap("c2s");
const down = lineTap("s2c");
process.stdin.on("data", (chunk) => {
    up.push(chunk);
    child.stdin.write(chunk);
});
process.stdin.on("end", () => {
    up.end();
    child.stdin.end();
});
child.stdin.on("error", () => {}); // the child may exit before reading everything
child.stdout.on("data", (chunk) => {
    down.push(chunk);
    process.stdout.write(chunk);
});
child.stdout.on("end", () => down.end());
for (const sig of ["SIGTERM", "SIGINT"]) {
    process.on(sig, () => child.kill(sig));
}
child.on("error", (e) => {
    process.stderr.write(`tee_shim: cannot run ${argv[1]}: ${e.message}\n`);
    process.exit(127);
});
child.on("close", (code, signal) => {
    down.end();
    process.exitCode = code ?? 128 + (signal === "SIGKILL" ? 9 : 15);
    process.stdin.destroy();
});
