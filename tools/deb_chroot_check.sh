#!/bin/sh
# Installs a .deb into a fresh Debian 12 (debootstrap --variant=minbase
# bookworm) chroot with apt-get, so its Depends are resolved from the
# archive alone, then runs the binary there: --version, and a lock (which
# loads libcrypto on first use). Needs root and the network; not part of
# make check (docs/building.md, "Debian package").
#
#   sh tools/deb_chroot_check.sh build-deb/agentstack_<version>_<arch>.deb [CHROOT]
#
# CHROOT (default a new temporary directory) is kept for a second run.
set -eu
die() { echo "deb_chroot_check: $*" >&2; exit 1; }
deb=${1:-}
[ -f "$deb" ] || die "usage: deb_chroot_check.sh FILE.deb [CHROOT]"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
root=${2:-$(mktemp -d "${TMPDIR:-/tmp}/agentstack-chroot-XXXXXX")}
if [ ! -x "$root/usr/bin/apt-get" ]; then
    command -v debootstrap >/dev/null 2>&1 || apt-get install -y -q debootstrap >/dev/null
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null ||
        die "debootstrap failed"
fi
# what a Debian 12 installation has: the point release and its security updates
cat >"$root/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/agentstack.deb"
chroot "$root" apt-get update -q >/dev/null
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends /tmp/agentstack.deb >/dev/null 2>&1 || die "apt-get install failed"
chroot "$root" agentstack --version
chroot "$root" sh -c 'set -e; d=$(mktemp -d); mkdir "$d/home" "$d/p"; cd "$d/p"
export HOME=$d/home AGENTSTACK_HOME=$d/home/.agentstack
printf "version = 1\n[servers.a]\ntype = \"stdio\"\ncommand = \"a-mcp\"\n" >agentstack.toml
agentstack lock --write >/dev/null; grep -q "^manifest_digest = " agentstack.lock'
echo "deb_chroot_check: ok in $root"
