#!/bin/sh
# toml parse throughput on a generated ~10 MB document.
# Usage: bench/toml_bench.sh <builddir>   (uses <builddir>/libas_base.a)
# Prints: toml parse  <MB/s> MB/s  (<size> file, best of N)
set -eu
B=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
lib=$B/libas_base.a
if [ ! -f "$lib" ]; then
    echo "toml_bench: $lib not found; build first (make build)" >&2
    exit 1
fi
san=""
if grep -qs '^AS_SANITIZE:BOOL=ON' "$B/CMakeCache.txt"; then
    san="-fsanitize=address,undefined"   # a sanitizer build: figures are not comparable
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O2 $san -std=gnu11 -D_GNU_SOURCE -I"$here/../src" -o "$tmp/toml_bench" \
    "$here/toml_bench.c" "$lib" -lm -lpthread
"$tmp/toml_bench" "${TOML_BENCH_BYTES:-10485760}" "${TOML_BENCH_ROUNDS:-5}"
