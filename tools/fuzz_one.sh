#!/bin/sh
# Runs one libFuzzer target and says whether it passed: used by
# tools/fuzz.sh for every target and by tools/fuzz_selftest.sh against a
# deliberately broken one.
#
#   sh tools/fuzz_one.sh <binary> <corpus dir> <seeds dir or -> <seconds>
#
# Fails (exit 1) on a crash, a leak, a timeout (FUZZ_TIMEOUT seconds per
# input, default 30), an out-of-memory, a target that was not built, or a run
# that executed no input; the reproducer is kept in <corpus dir>/../artifacts.
# All paths are made absolute first: a target may chdir (fuzz_gateway does).
set -u
bin=$1 corpus=$2 seeds=$3 secs=$4
n=$(basename "$bin")
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
bin=$(abs "$bin")
corpus=$(abs "$corpus")
if [ ! -x "$bin" ]; then
    echo "fuzz: $n FAILED: $bin was not built" >&2
    exit 1
fi
set --
if [ "$seeds" != - ]; then
    seeds=$(abs "$seeds")
    if [ ! -d "$seeds" ]; then
        echo "fuzz: $n FAILED: no seed directory $seeds" >&2
        exit 1
    fi
    set -- "$seeds"
fi
artifacts=$(dirname "$corpus")/artifacts
mkdir -p "$corpus" "$artifacts" || exit 1
log=$(mktemp "${TMPDIR:-/tmp}/fuzz-$n-XXXXXX.log") || exit 1
echo "fuzz: $n for ${secs}s"
"$bin" -max_total_time="$secs" -timeout="${FUZZ_TIMEOUT:-30}" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$n-" "$corpus" "$@" >"$log" 2>&1
rc=$?
tail -n 12 "$log"
runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
why=""
if [ $rc -ne 0 ]; then
    why=$(grep -m 1 'ERROR: ' "$log" || grep -m 1 -E 'SUMMARY: |timeout|out-of-memory' "$log" ||
        true)
    why="exit $rc${why:+: $why}"
elif [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
    why="no input was executed"
fi
if [ -n "$why" ]; then
    echo "fuzz: $n FAILED ($why); full log: $log; reproducers: $artifacts" >&2
    exit 1
fi
rm -f "$log"
echo "fuzz: $n ok ($runs inputs)"
