#!/bin/sh
# Builds OUT/agentstack_<version>_<arch>.deb from a built tree (`make deb`;
# docs/building.md, "Debian package").
#
#   sh tools/mkdeb.sh BUILD OUT
#
# The package holds what `make install` installs, under /usr. Depends: what
# dpkg-shlibdeps reads from the binary's linked libraries, plus the
# libraries the binary loads on first use (dlopen, invisible to
# dpkg-shlibdeps: libcrypto, libidn2, libcurl), each with the version floor
# its package's shlibs file declares; libsecret (the desktop keychain) is a
# Recommends, since the other secret stores work without it.
set -eu
die() { echo "mkdeb: $*" >&2; exit 1; }
build=${1:-build}
out=${2:-$build}
for t in dpkg-deb dpkg-shlibdeps fakeroot; do
    command -v $t >/dev/null 2>&1 || die "$t is missing (apt-get install dpkg-dev fakeroot)"
done
[ -x "$build/agentstack" ] || die "no binary at $build/agentstack (make build first)"
version=$("$build/agentstack" --version | awk '{ print $2 }')
case "$version" in [0-9]*) ;; *) die "cannot read the version from $build/agentstack" ;; esac
arch=$(dpkg --print-architecture)

stage=$(mktemp -d "${TMPDIR:-/tmp}/agentstack-deb-XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/root
DESTDIR=$root cmake --install "$build" --prefix /usr >/dev/null
strip --strip-unneeded "$root/usr/bin/agentstack" 2>/dev/null || true
for p in "$root"/usr/share/man/man1/*.1; do gzip -9n "$p"; done
mkdir -p "$root/usr/share/doc/agentstack"
gzip -9nc README.md >"$root/usr/share/doc/agentstack/README.md.gz" 2>/dev/null ||
    gzip -9nc "$(dirname "$0")/../README.md" >"$root/usr/share/doc/agentstack/README.md.gz"

# dpkg-shlibdeps wants a debian/control beside it
mkdir -p "$stage/debian"
printf 'Source: agentstack\n\nPackage: agentstack\nArchitecture: any\n' >"$stage/debian/control"
linked=$(cd "$stage" && dpkg-shlibdeps -O root/usr/bin/agentstack 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$linked" ] || die "dpkg-shlibdeps found no dependency"

# the dependency a dlopened soname (libfoo.so.N) needs, from its package's shlibs
dlopened() {
    so=$1
    path=$(ldconfig -p | awk -v so="$so" '$1 == so { print $NF; exit }')
    [ -n "$path" ] || die "$so is not installed here: cannot name its package"
    pkg=$(dpkg-query -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || pkg=$(dpkg-query -S "$(readlink -f "$path")" | head -1 | cut -d: -f1)
    name=${so%%.so.*}
    major=${so##*.so.}
    shlibs=$(ls /var/lib/dpkg/info/"$pkg".shlibs /var/lib/dpkg/info/"$pkg":*.shlibs \
        2>/dev/null | head -1)
    dep=""
    [ -n "$shlibs" ] && dep=$(awk -v n="$name" -v m="$major" \
        '$1 == n && $2 == m { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' "$shlibs")
    echo "${dep:-$pkg}"
}
crypto_so=$(ldconfig -p | awk '$1 ~ /^libcrypto\.so\.[0-9]+$/ { print $1; exit }')
depends="$linked, $(dlopened "$crypto_so"), $(dlopened libidn2.so.0), $(dlopened libcurl.so.4)"
recommends=$(dlopened libsecret-1.so.0 2>/dev/null || true)
size=$(du -sk "$root" | cut -f1)

mkdir -p "$root/DEBIAN"
{
    echo "Package: agentstack"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: agentstack maintainers <agentstack@localhost>"
    echo "Installed-Size: $size"
    echo "Depends: $depends"
    [ -n "$recommends" ] && echo "Recommends: $recommends"
    echo "Section: devel"
    echo "Priority: optional"
    echo "Description: one reviewed, portable, governed setup for AI coding agents"
    echo " agentstack renders one reviewed manifest into every AI coding CLI's own"
    echo " configuration and governs what the agents run, reach and call."
} >"$root/DEBIAN/control"
mkdir -p "$out"
deb="$out/agentstack_${version}_${arch}.deb"
fakeroot dpkg-deb --build -Zgzip "$root" "$deb" >/dev/null
echo "$deb"
