# Shared by the runnable demos in docs/*-demo.sh (sourced, not run).
#
# Why: each demo replays a documented flow with the real binary, and must be
# safe to run on any machine and honest when it fails.
# Guarantees: everything happens under a fresh temporary HOME and
# AGENTSTACK_HOME (removed on exit, whatever happens), never your real
# configs; the demos talk to loopback only; every claim is checked and named
# ("✓ proves: …" or "✗ FAILED: …"), and the demo exits 1 when any claim fails.
#
# Usage inside a demo:  . "$(dirname "$0")/demo-lib.sh"   (it reads the demo's own $1)
# Then the binary is $AS, the scratch tree $DEMO, and:
#   step CMD...      prints "$ agentstack …" and runs it; output in $OUT, exit code in $RC
#   proves CLAIM TEST...   runs TEST; prints ✓/✗ for CLAIM, counts failures
#   has TEXT / lacks TEXT  whether $OUT contains TEXT (fixed string)
#   finish           the verdict: exit 0 only if every claim held

demo_bin=${1:-}
if [ -z "$demo_bin" ]; then
    demo_bin=$(command -v agentstack 2>/dev/null || true)
fi
if [ -z "$demo_bin" ] || [ ! -x "$demo_bin" ]; then
    echo "usage: sh $0 [path/to/agentstack]   (no agentstack on PATH)" >&2
    exit 2
fi
AS=$(cd "$(dirname "$demo_bin")" && pwd)/$(basename "$demo_bin")
DEMO_DOCS=$(cd "$(dirname "$0")" && pwd)

DEMO=$(mktemp -d "${TMPDIR:-/tmp}/agentstack-demo.XXXXXX")
trap 'demo_cleanup' EXIT
trap 'exit 130' INT TERM
demo_cleanup() {
    for p in ${DEMO_PIDS:-}; do kill "$p" 2>/dev/null || true; done
    rm -rf "$DEMO"
}

# The fence: a throwaway home, nothing inherited that points at the real one.
for v in $(env | sed -n 's/^\(AGENTSTACK_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(XDG_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
export HOME="$DEMO/home"
export AGENTSTACK_HOME="$HOME/.agentstack"
export NO_COLOR=1
# You, running this demo, are the person consenting to the throwaway
# project's trust grant (docs/trust.md), even from an agent's terminal.
export AGENTSTACK_CONSENT_BY_PERSON=1
mkdir -p "$HOME"

DEMO_FAILED=0
DEMO_PROVED=0
OUT=
RC=0

step() {
    printf '\n$ agentstack'
    for a in "$@"; do
        case $a in
            *[!A-Za-z0-9_./:@=+,-]* | '') printf " '%s'" "$(printf '%s' "$a" | sed "s/'/'\\\\''/g")" ;;
            *) printf ' %s' "$a" ;;
        esac
    done
    printf '\n'
    set +e
    OUT=$("$AS" "$@" 2>&1)
    RC=$?
    set -e
    printf '%s\n' "$OUT" | sed 's/^/    /'
}

has() { printf '%s\n' "$OUT" | grep -qF -- "$1"; }
lacks() { ! has "$1"; }

proves() {
    claim=$1
    shift
    if "$@"; then
        DEMO_PROVED=$((DEMO_PROVED + 1))
        printf '  ✓ proves: %s\n' "$claim"
    else
        DEMO_FAILED=$((DEMO_FAILED + 1))
        printf '  ✗ FAILED: %s\n' "$claim"
    fi
}

finish() {
    echo
    if [ "$DEMO_FAILED" -ne 0 ]; then
        echo "$DEMO_FAILED of $((DEMO_PROVED + DEMO_FAILED)) claims FAILED"
        exit 1
    fi
    echo "all $DEMO_PROVED claims hold"
}
