#!/bin/sh
# lock --write over a generated >= 200 MB skill tree vs `openssl dgst -sha256`
# over the same files in the same run (the digest walk must be I/O- and
# hash-bound), and trust --preview on a 100-server manifest vs --version.
set -eu
B=${1:-build}
bin=$(cd "$B" && pwd)/agentstack
tmp=$(mktemp -d /tmp/as-bench-lock-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
export HOME="$tmp/home" AGENTSTACK_HOME="$tmp/home/.agentstack" NO_COLOR=1
mkdir -p "$HOME" "$tmp/p/.agentstack" "$tmp/s/.agentstack"
python3 - "$tmp/p" "$tmp/s" <<'PY'
import os, sys
p, s = sys.argv[1], sys.argv[2]
d = os.path.join(p, "skills", "big")
os.makedirs(d)
with open(os.path.join(d, "SKILL.md"), "w") as f:
    f.write("---\ndescription: bench\n---\n")
block = os.urandom(1 << 20)
for i in range(200):
    sub = os.path.join(d, f"part{i % 10}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"blob{i:03d}.bin"), "wb") as f:
        f.write(block[i:] + block[:i])
with open(os.path.join(p, ".agentstack", "agentstack.toml"), "w") as f:
    f.write('version = 1\n[skills.big]\npath = "../skills/big"\n')
with open(os.path.join(s, ".agentstack", "agentstack.toml"), "w") as f:
    f.write('version = 1\n')
    for i in range(100):
        f.write(f'[servers.s{i}]\ntype = "stdio"\ncommand = "npx"\n'
                f'args = ["-y", "@example/server-{i}", "--flag"]\nenv = {{ TOKEN = "${{TOKEN_{i}}}" }}\n')
PY
# wall seconds of one run of a command
secs() {
    python3 -c 'import sys, time, subprocess
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{time.perf_counter() - t:.3f}")' "$@"
}
cd "$tmp/p"
# warm the page cache so both sides read from memory
find skills -type f -exec cat {} + >/dev/null
t_ssl=$(secs sh -c 'find skills -type f -print0 | xargs -0 openssl dgst -sha256 >/dev/null')
t_first=$(secs "$bin" lock --write)
t_lock=$(secs "$bin" lock --write)
mb=200
printf '%-34s %10ss %10ss %8s\n' "lock --write 200 MB (steady)" "$t_lock" "$t_ssl" \
    "$(python3 -c "print(f'{$t_ssl/$t_lock:.2f}x')")"
printf '%-34s %10ss %10ss %8s\n' "lock --write 200 MB (first, store)" "$t_first" "$t_ssl" \
    "$(python3 -c "print(f'{$t_ssl/$t_first:.2f}x')")"
cd "$tmp/s"
"$bin" lock --write >/dev/null
# best-of-3 mean wall milliseconds of 20 runs of a command
ms20() {
    python3 - "$@" <<'PY'
import subprocess, sys, time
best = None
for _ in range(3):
    t = time.perf_counter()
    for _ in range(20):
        subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = (time.perf_counter() - t) / 20 * 1e3
    best = d if best is None or d < best else best
print(f"{best:.2f}")
PY
}
t_prev=$(ms20 "$bin" trust . --preview)
t_ver=$(ms20 "$bin" --version)
printf '%-34s %10sms %10sms %8s\n' "trust --preview (100 servers)" "$t_prev" "$t_ver" \
    "$(python3 -c "print(f'+{$t_prev-$t_ver:.2f}ms')")"
