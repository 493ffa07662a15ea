#!/bin/sh
# make fuzz: builds the libFuzzer targets (fuzz/fuzz_*.c) with clang
# (installing it from Debian when missing and running as root) and runs each
# for FUZZ_SECONDS (default 60) from its seeds (fuzz/seeds/<target>/) through
# tools/fuzz_one.sh. Fails when any target crashes, leaks, times out, was
# not built or ran nothing, naming every such target at the end; a target
# failing never stops the others from running.
set -u
cd "$(dirname "$0")/.."
if ! command -v clang >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then apt-get install -y -q clang >/dev/null || exit 1
    else echo "fuzz: clang is missing; run: sudo apt-get install -y clang" >&2; exit 1; fi
fi
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DAS_FUZZ=ON >/dev/null || exit 1
cmake --build build-fuzz -j "$(nproc)" >/dev/null || exit 1
secs=${FUZZ_SECONDS:-60}
failed="" ran=0
for f in fuzz/fuzz_*.c; do
    n=$(basename "$f" .c)
    ran=$((ran + 1))
    sh tools/fuzz_one.sh "build-fuzz/$n" "build-fuzz/corpus/$n" "fuzz/seeds/$n" "$secs" ||
        failed="$failed $n"
done
if [ $ran -eq 0 ]; then
    echo "fuzz: FAILED: no fuzz/fuzz_*.c target found" >&2
    exit 1
fi
if [ -n "$failed" ]; then
    echo "fuzz: FAILED:$failed (of $ran targets)" >&2
    exit 1
fi
echo "fuzz: all $ran targets ran ${secs}s each: no crash, leak or timeout"
