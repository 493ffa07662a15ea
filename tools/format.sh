#!/bin/sh
# make format / make format-check: clang-format over every tracked C file
# (generated C, such as the embedded adapter descriptors, lives in the build
# directory and is never tracked).
set -eu
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null 2>&1 || {
    echo "format: clang-format is missing; run: apt-get install -y clang-format" >&2
    exit 1
}
files=$(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--check" ]; then
    bad=0
    for f in $files; do
        clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || { echo "format: $f"; bad=1; }
    done
    [ $bad -eq 0 ] || { echo "format: run 'make format' (clang-format $(clang-format --version | sed 's/.*version //'))" >&2; exit 1; }
else
    # shellcheck disable=SC2086
    clang-format -i $files
fi
