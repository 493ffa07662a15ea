#!/bin/sh
# make bench: each row compares our figure with a baseline measured in the
# same run (a direct connection, a raw syscall, a peer tool), because
# absolute times on shared machines drift. Runs every bench/*_bench.sh with
# the build dir; a script that fails or overruns its time budget becomes a
# "skipped: <why>" row and the table goes on (exit 77 means "skipped", with
# the reason as the last line on stderr).
# Usage: sh bench/run.sh <builddir>   (a Release build; see docs/performance.md)
set -u
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
budget=${BENCH_TIMEOUT:-150}
t0=$(date +%s)

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
# BENCH_REV names the commit when the build came from a snapshot (git archive)
rev=${BENCH_REV:-$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)}
printf '# %s  commit %s  %s cores  %s  load %s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$rev" \
    "$(nproc 2>/dev/null || echo ?)" "${cpu:-unknown CPU}" \
    "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"
cache=$B/CMakeCache.txt
if [ -f "$cache" ]; then
    bt=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")
    if [ "$bt" != Release ] || grep -qs '^AS_SANITIZE:BOOL=ON' "$cache"; then
        echo "# warning: $B is not a plain Release build (${bt:-no type}); figures are not comparable"
    fi
fi
printf '%-34s %12s %12s %10s\n' "benchmark" "ours" "baseline" "delta"

# Fixed order (start-up first, the slow callgrind rows last), then any
# script added later.
order="startup gateway interop proxy lock toml guard callgrind"
for s in "$here"/*_bench.sh; do
    n=$(basename "$s" _bench.sh)
    case " $order " in *" $n "*) ;; *) order="$order $n" ;; esac
done
err=$(mktemp /tmp/as-bench-err-XXXXXX)
trap 'rm -f "$err"' EXIT INT TERM
for n in $order; do
    s=$here/${n}_bench.sh
    [ -f "$s" ] || continue
    timeout "$budget" sh "$s" "$B" 2>"$err"
    rc=$?
    if [ $rc -eq 0 ]; then
        # a script's stderr carries its notes (percentiles, rates): show them
        sed -e '/^[[:space:]]*$/d' -e 's/^\([^[:space:]]\)/  \1/' "$err"
    else
        if [ $rc -eq 124 ]; then
            why="timed out after ${budget}s"
        elif [ $rc -eq 77 ]; then # the automake/ctest "skipped" code: the reason is on stderr
            why=$(grep -v '^[[:space:]]*$' "$err" | tail -n 1)
        else
            why="exit $rc: $(grep -v '^[[:space:]]*$' "$err" | tail -n 1)"
        fi
        printf '%-34s skipped: %s\n' "$n (rest of its rows)" "$why"
    fi
done
echo "# total $(($(date +%s) - t0))s"
