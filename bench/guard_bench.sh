#!/bin/sh
# Host guard judgments per second over 1,000 generated agent commands and
# the fast path's latency, beside a payload-parse baseline and a bare
# process start (see bench/guard_bench.c).
# Usage: bench/guard_bench.sh <builddir>   (needs <builddir>/guard_bench)
# Knobs: GUARD_BENCH_ROUNDS (5), GUARD_BENCH_MS (300, per round and path)
set -eu
B=${1:-build}
gb=$B/guard_bench
if [ ! -x "$gb" ] || [ ! -x "$B/agentstack" ]; then
    printf '%-34s skipped: %s\n' "guard (all rows)" "$gb or $B/agentstack not built"
    exit 0
fi
"$gb" "$B/agentstack" "${GUARD_BENCH_ROUNDS:-5}" "${GUARD_BENCH_MS:-300}"
