#!/bin/sh
# Checks the build dependencies with pkg-config and installs what is missing
# from Debian's packages (as root), or prints the exact command (otherwise).
# Quiet and idempotent when everything is present.
set -u
missing=""
need() { # $1 = pkg-config name, $2 = Debian package
    pkg-config --exists "$1" 2>/dev/null || missing="$missing $2"
}
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
need libcrypto libssl-dev
need jansson libjansson-dev
need libcurl libcurl4-openssl-dev
need yaml-0.1 libyaml-dev
need libidn2 libidn2-dev
need libsecret-1 libsecret-1-dev
# `make check` also needs the unit test library (cmocka) and runs tests that
# drive real peers: a Secret Service (gnome-keyring under dbus-run-session),
# network namespaces (iproute2), TLS clients and servers (curl, openssl),
# the shells the completions are for, and the man page renderer.
# `make build` / `make install` need none of them.
if [ "${1:-}" = "--test" ]; then
    need cmocka libcmocka-dev
    have() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
    have gnome-keyring-daemon gnome-keyring
    have secret-tool libsecret-tools
    have dbus-run-session dbus
    have ip iproute2
    have curl curl
    have openssl openssl
    have zsh zsh
    have fish fish
    have groff groff
    have man man-db
    have dpkg-shlibdeps dpkg-dev
fi
[ -z "$missing" ] && exit 0
cmd="apt-get install -y$missing"
if [ "$(id -u)" = 0 ]; then
    echo "deps: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q $missing >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $missing >/dev/null; } ||
        { echo "deps: '$cmd' failed" >&2; exit 1; }
else
    echo "deps: missing$missing" >&2
    echo "run: sudo $cmd" >&2
    exit 1
fi
