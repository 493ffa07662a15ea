#!/bin/sh
# make bench: each row compares our figure with a baseline measured in the
# same run, because absolute times on shared machines drift.
set -eu
B=${1:-build}
bin=$B/agentstack
n=${BENCH_N:-300}

# wall time of N sequential runs of a command, in microseconds per run
per_run_us() {
    python3 - "$n" "$@" <<'PY'
import subprocess, sys, time
n = int(sys.argv[1]); cmd = sys.argv[2:]
best = None
for _ in range(3):
    t = time.perf_counter()
    for _ in range(n):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = (time.perf_counter() - t) / n * 1e6
    best = d if best is None or d < best else best
print(f"{best:.0f}")
PY
}

printf '%-34s %12s %12s %10s\n' "benchmark" "ours" "baseline" "delta"
t_true=$(per_run_us /bin/true)
t_ver=$(per_run_us "$bin" --version)
printf '%-34s %10sus %10sus %8sus\n' "agentstack --version vs /bin/true" "$t_ver" "$t_true" \
    "$((t_ver - t_true))"
for s in bench/*_bench.sh; do
    [ -f "$s" ] && sh "$s" "$B"
done
