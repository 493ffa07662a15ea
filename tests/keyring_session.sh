#!/bin/sh
# Starts an unlocked gnome-keyring (secrets component only) in the current
# D-Bus session, waits until it owns org.freedesktop.secrets, then execs
# "$@". Run it inside `dbus-run-session` with HOME set to a temporary
# directory: the keyring files go there, never into a real keyring.
#
# The wait matters: `gnome-keyring-daemon --unlock` can return before its
# daemon has claimed the bus name, and a test that asks for the Secret
# Service in that window makes D-Bus activate a second daemon with a locked
# keyring, which then tries to prompt for a password (seen once in
# `make check`: the keychain test failed on the first store).
printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1
i=0
until dbus-send --session --dest=org.freedesktop.DBus --print-reply /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null |
    grep -q 'boolean true'; do
    i=$((i + 1))
    if [ "$i" -gt 200 ]; then
        echo "keyring_session: gnome-keyring-daemon did not claim org.freedesktop.secrets in 10 s" >&2
        exit 1
    fi
    sleep 0.05
done
exec "$@"
