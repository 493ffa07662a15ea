#!/bin/sh
# Installs a built tree, or removes exactly what an install put there
# (docs/building.md, "Installing"). `make install` and `make uninstall` run it.
#
#   sh tools/install_tree.sh install BUILD PREFIX [DESTDIR]
#   sh tools/install_tree.sh uninstall PREFIX [DESTDIR]
#
# install: `cmake --install BUILD` (binary, man pages, completion scripts),
# then writes PREFIX/share/agentstack/installed-files: every file it
# installed ("f PATH") and every directory that did not exist before ("d
# PATH"), merged with the list of an earlier install, so installing twice
# and uninstalling once still removes everything.
# uninstall: removes the listed files, then the listed directories that are
# empty; a file or directory it did not install is never touched.
set -eu
die() { echo "install_tree: $*" >&2; exit 1; }
mode=${1:-}
case "$mode" in
install)
    [ $# -ge 3 ] || die "usage: install BUILD PREFIX [DESTDIR]"
    build=$2 prefix=$3 dest=${4:-}
    ;;
uninstall)
    [ $# -ge 2 ] || die "usage: uninstall PREFIX [DESTDIR]"
    prefix=$2 dest=${3:-}
    ;;
*) die "usage: install BUILD PREFIX [DESTDIR] | uninstall PREFIX [DESTDIR]" ;;
esac
case "$prefix" in /*) ;; *) die "PREFIX must be absolute (got '$prefix')" ;; esac
prefix=${prefix%/}
[ -n "$prefix" ] || die "PREFIX must not be /"
list_rel=share/agentstack/installed-files
list="$dest$prefix/$list_rel"

if [ "$mode" = uninstall ]; then
    [ -f "$list" ] || die "nothing recorded at $list (was agentstack installed with PREFIX=$prefix?)"
    entries=$(cat "$list") # the list is one of the files removed
    # files first, then directories deepest first
    printf '%s\n' "$entries" | grep '^f /' | cut -c3- | while IFS= read -r f; do
        rm -f "$dest$f"
    done
    printf '%s\n' "$entries" | grep '^d /' | cut -c3- | awk '{ print length($0) "\t" $0 }' | sort -rn |
        cut -f2- | while IFS= read -r d; do
            [ -d "$dest$d" ] && rmdir "$dest$d" 2>/dev/null || true
        done
    exit 0
fi

[ -f "$build/cmake_install.cmake" ] || die "no build in '$build' (make build first)"
old=""
[ -f "$list" ] && old=$(grep '^d /' "$list" || true)
# the directories an install may create, each with every parent below DESTDIR
dirs_before=""
for d in bin share/man/man1 share/bash-completion/completions share/zsh/vendor-completions \
    share/fish/vendor_completions.d share/agentstack; do
    p=$prefix/$d
    while [ -n "$p" ] && [ "$p" != / ]; do
        [ -e "$dest$p" ] || dirs_before="$dirs_before
d $p"
        p=${p%/*}
    done
done
DESTDIR=$dest cmake --install "$build" --prefix "$prefix" >/dev/null
mkdir -p "$dest$prefix/share/agentstack"
tmp="$list.tmp.$$"
{
    # (cmake ends the manifest without a newline)
    { cat "$build/install_manifest.txt"; echo; } | grep . | sed "s|^$dest||; s|^|f |"
    echo "f $prefix/$list_rel"
    printf '%s\n' "$old" "$dirs_before" | grep '^d /' || true
} | sort -u >"$tmp"
mv "$tmp" "$list"
