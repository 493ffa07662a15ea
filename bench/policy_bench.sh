#!/bin/sh
# Policy decisions per second on a 1,000-rule ruleset (tools and egress,
# machine + project layers) vs a naive fnmatch(3) scan of the same 1,000
# patterns per name. Issue 4's goal: >= 1 M decisions/s on one core.
# Usage: bench/policy_bench.sh <builddir>   (needs <builddir>/policy_bench)
# Knobs: POLICY_BENCH_ROUNDS (5), POLICY_BENCH_MS (300, per round and path)
set -eu
B=${1:-build}
pb=$B/policy_bench
if [ ! -x "$pb" ]; then
    printf '%-34s skipped: %s\n' "policy (all rows)" "$pb not built (needs the policy module)"
    exit 0
fi
"$pb" "${POLICY_BENCH_ROUNDS:-5}" "${POLICY_BENCH_MS:-300}"
