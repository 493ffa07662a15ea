#!/bin/sh
# Builds the libFuzzer targets with clang (installing it from Debian when
# missing and running as root) and runs each for FUZZ_SECONDS (default 60).
set -eu
if ! command -v clang >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then apt-get install -y -q clang >/dev/null;
    else echo "fuzz: clang is missing; run: sudo apt-get install -y clang" >&2; exit 1; fi
fi
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DAS_FUZZ=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" >/dev/null
secs=${FUZZ_SECONDS:-60}
for f in fuzz/fuzz_*.c; do
    n=$(basename "$f" .c)
    corpus=build-fuzz/corpus/$n
    mkdir -p "$corpus"
    seeds=fuzz/seeds/$n
    [ -d "$seeds" ] || seeds=""
    echo "fuzz: $n for ${secs}s"
    build-fuzz/$n -max_total_time="$secs" -print_final_stats=1 "$corpus" $seeds 2>&1 | tail -n 12
done
