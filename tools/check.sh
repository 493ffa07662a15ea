#!/bin/sh
# make check, after the sanitizer build: every test through ctest in
# build-asan/, then the reason of every skip. A test that cannot run here
# exits 77 and ctest counts it as skipped (SKIP_RETURN_CODE); its one-line
# reason ("SKIP: ...") is printed again at the end so no skip goes unnoticed.
# Under CI=true the tests themselves fail instead of skipping
# (docs/building.md, "What make check skipped").
set -u
cd "$(dirname "$0")/../build-asan" || exit 1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --output-on-failure -j "${JOBS:-2}" "$@"
rc=$?
log=Testing/Temporary/LastTest.log
if [ -f "$log" ] && grep -q '^SKIP' "$log"; then
    echo "make check: what was skipped, and why:"
    awk '/^[0-9]+\/[0-9]+ Testing: / { t = $3 } /^SKIP/ { print "  " t ": " $0 }' "$log" | sort -u
fi
exit $rc
