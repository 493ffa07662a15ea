#!/bin/sh
# The call audit's append (src/audit/aud_chain.c): its latency alone and while a
# second process appends to the same calls.jsonl, p50/p99/max and the
# appends over 1 ms; the chain is verified afterwards. Issue 5: the append
# runs on the gateway's event loop, so lock contention is call latency.
# Usage: bench/audit_bench.sh <builddir>   (needs <builddir>/audit_bench)
# Knob: AUDIT_BENCH_N (2000 rows per writer)
set -eu
B=${1:-build}
ab=$B/audit_bench
if [ ! -x "$ab" ]; then
    printf '%-34s skipped: %s\n' "audit (all rows)" "$ab not built (needs the audit module)"
    exit 0
fi
tmp=$(mktemp -d /tmp/as-bench-audit-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/home/.agentstack"
HOME="$tmp/home" AGENTSTACK_HOME="$tmp/home/.agentstack" \
    "$ab" "$tmp/home/.agentstack" "${AUDIT_BENCH_N:-2000}"
