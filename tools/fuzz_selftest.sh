#!/bin/sh
# Proves that `make fuzz` cannot pass over a broken target: builds the
# deliberately broken fuzz/selftest/fuzz_selftest_target.c with libFuzzer
# (a few seconds of clang, no project code) and runs it through
# tools/fuzz_one.sh — the runner `make fuzz` uses for every target — fed
# its known-bad inputs. Passes only if the runner fails on the crash, the
# leak, the hang and on a target that was never built, and passes on the
# harmless seed. CI runs it after `make fuzz` (.ci/run).
set -u
cd "$(dirname "$0")/.."
command -v clang >/dev/null 2>&1 || { echo "fuzz-selftest: clang is missing" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-selftest-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
t=$tmp/fuzz_selftest
clang -g -O1 -fsanitize=fuzzer,address,undefined -o "$t" fuzz/selftest/fuzz_selftest_target.c ||
    { echo "fuzz-selftest: cannot build the self-test target" >&2; exit 1; }
bad=0
expect() { # $1 = pass|fail, $2 = what, then the fuzz_one.sh arguments
    want=$1 what=$2
    shift 2
    out=$(TMPDIR=$tmp FUZZ_TIMEOUT=3 sh tools/fuzz_one.sh "$@" 2>&1)
    rc=$?
    if { [ "$want" = fail ] && [ $rc -ne 0 ]; } || { [ "$want" = pass ] && [ $rc -eq 0 ]; }; then
        echo "ok   $what"
    else
        echo "FAIL $what (fuzz_one.sh exit $rc)"
        echo "$out" | sed 's/^/     /'
        bad=1
    fi
}
expect pass "a healthy target passes (harmless seed, 2 s)" "$t" "$tmp/c-ok" fuzz/selftest/ok 2
expect fail "a crashing input fails make fuzz" "$t" "$tmp/c-crash" fuzz/selftest/crash 2
expect fail "a leaking input fails make fuzz" "$t" "$tmp/c-leak" fuzz/selftest/leak 2
expect fail "a hanging input fails make fuzz (timeout)" "$t" "$tmp/c-hang" fuzz/selftest/hang 10
expect fail "a target that was not built fails make fuzz" "$tmp/no-such-target" "$tmp/c-none" \
    fuzz/selftest/ok 2
expect fail "a missing seed directory fails make fuzz" "$t" "$tmp/c-noseeds" "$tmp/no-seeds" 2
[ $bad -eq 0 ] && echo "fuzz-selftest: make fuzz fails on every broken target" && exit 0
exit 1
