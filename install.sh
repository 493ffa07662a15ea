#!/bin/sh
# Installs agentstack: the binary, its man pages and the bash/zsh/fish
# completions (docs/building.md, "Installing"). Idempotent: running it again
# installs the same files over the same files.
#
#   sh install.sh [--prefix DIR] [--build DIR]
#       build this checkout from source and install into DIR (default
#       /usr/local as root, else ~/.local); --build reuses a configured
#       build tree instead of build-install/
#   sh install.sh --source URL --sha256 HEX [--prefix DIR]
#       fetch a source tarball (https:// or file://), check its SHA-256,
#       then build and install it as above
#   sh install.sh --deb FILE|URL [--sha256 HEX]
#       install a Debian package (as root, with apt-get so its Depends are
#       met); a URL needs --sha256
#
# Nothing fetched is used before its checksum matches; without one a URL is
# refused.
set -eu
die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

prefix="" build="" source_url="" deb="" sha=""
while [ $# -gt 0 ]; do
    case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --build) [ $# -ge 2 ] || die "--build needs a directory"; build=$2; shift 2 ;;
    --build=*) build=${1#*=}; shift ;;
    --source) [ $# -ge 2 ] || die "--source needs a URL"; source_url=$2; shift 2 ;;
    --source=*) source_url=${1#*=}; shift ;;
    --deb) [ $# -ge 2 ] || die "--deb needs a file or URL"; deb=$2; shift 2 ;;
    --deb=*) deb=${1#*=}; shift ;;
    --sha256) [ $# -ge 2 ] || die "--sha256 needs a hex digest"; sha=$2; shift 2 ;;
    --sha256=*) sha=${1#*=}; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see: sh install.sh --help)" ;;
    esac
done
[ -z "$deb" ] || [ -z "$source_url" ] || die "give --deb or --source, not both"
[ -z "$deb" ] || [ -z "$prefix$build" ] || die "--prefix and --build are for a source install"
case "$sha" in
"") ;;
*[!0-9a-fA-F]*) die "--sha256 must be 64 hex digits (got '$sha')" ;;
*) [ ${#sha} -eq 64 ] || die "--sha256 must be 64 hex digits (got ${#sha})" ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/agentstack-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# fetch URL|FILE OUT: a URL is downloaded (https or file only) and, like a
# local file given a digest, checked before anything reads it
fetch() {
    case "$1" in
    https://* | file://*)
        [ -n "$sha" ] || die "refusing to fetch $1 without --sha256 (nothing is used unchecked)"
        command -v curl >/dev/null 2>&1 || die "curl is needed to fetch $1"
        curl -fsSL --proto '=https,file' --proto-redir '=https' -o "$2" "$1" ||
            die "could not fetch $1"
        ;;
    *://*) die "only https:// and file:// URLs are fetched (got $1)" ;;
    *) [ -f "$1" ] || die "no such file: $1"; cp "$1" "$2" ;;
    esac
    if [ -n "$sha" ]; then
        got=$(sha256sum "$2" | cut -d' ' -f1)
        want=$(echo "$sha" | tr 'A-F' 'a-f')
        [ "$got" = "$want" ] || die "checksum mismatch for $1: got $got, expected $want"
        say "sha256 ok: $got"
    fi
}

if [ -n "$deb" ]; then
    [ "$(id -u)" = 0 ] || die "a .deb installs system-wide: run as root, or install from source into ~/.local (sh install.sh)"
    fetch "$deb" "$tmp/agentstack.deb"
    if command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$tmp/agentstack.deb" >/dev/null ||
            die "apt-get could not install the package"
    else
        dpkg -i "$tmp/agentstack.deb" >/dev/null || die "dpkg could not install the package"
    fi
    say "installed $(agentstack --version)"
    exit 0
fi

if [ -z "$prefix" ]; then
    if [ "$(id -u)" = 0 ]; then prefix=/usr/local; else prefix=$HOME/.local; fi
fi
case "$prefix" in /*) ;; *) prefix=$(pwd)/$prefix ;; esac

if [ -n "$source_url" ]; then
    fetch "$source_url" "$tmp/src.tar"
    mkdir "$tmp/src"
    tar -xf "$tmp/src.tar" -C "$tmp/src" || die "cannot unpack $source_url"
    src=$(dirname "$(find "$tmp/src" -maxdepth 2 -name CMakeLists.txt | head -1)")
    [ -f "$src/install.sh" ] || die "$source_url holds no agentstack source tree"
else
    [ -z "$sha" ] || die "--sha256 goes with --source or --deb"
    src=$(cd "$(dirname "$0")" && pwd)
    [ -f "$src/CMakeLists.txt" ] || die "run install.sh from an agentstack checkout, or give --source URL"
fi

if [ -z "$build" ]; then
    sh "$src/tools/deps.sh" || die "missing build dependencies (above)"
    build=$src/build-install
    [ -z "$source_url" ] || build=$tmp/build
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DAS_TESTS=OFF >/dev/null
fi
[ -f "$build/CMakeCache.txt" ] || die "no configured build tree in $build"
# only what is installed: the binary, then its pages and completions
cmake --build "$build" --target agentstack as_gen_docs -j "$(nproc 2>/dev/null || echo 2)" >/dev/null ||
    die "the build failed"
sh "$src/tools/install_tree.sh" install "$build" "$prefix"
say "installed $("$prefix/bin/agentstack" --version) into $prefix"
case ":$PATH:" in
*":$prefix/bin:"*) ;;
*) say "note: $prefix/bin is not on PATH" ;;
esac
