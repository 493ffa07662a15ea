"""The seed replay of `make check` (fuzz/replay_main.c) fails when it should.

Runs the replay driver linked with the deliberately broken target
(fuzz_selftest_target.c) over: the harmless input (must pass and say it ran
one input), the crashing input (must fail, naming the input), the leaking
input (must fail: LeakSanitizer at exit; only in a sanitizer build), and an
empty directory (must fail: a corpus that replays nothing proves nothing).
A hang is caught by the TIMEOUT ctest sets on every fuzz/<target> replay.

  python3 replay_selftest.py <replay_fuzz_selftest binary> <fuzz/selftest dir>
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "e2e"))
from aslib import check, done, skip_part  # noqa: E402

BIN, HERE = sys.argv[1], sys.argv[2]


def replay(*args):
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1"
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120, env=env)


def sanitized():
    """True when the driver was built with AddressSanitizer (make check's
    build-asan): only then can a leak be detected."""
    with open(BIN, "rb") as f:
        return b"__asan_init" in f.read()


r = replay(os.path.join(HERE, "ok"))
check(r.returncode == 0 and "replay: 1 inputs, no crash" in r.stdout,
      "a harmless input replays and passes", (r.returncode, r.stdout, r.stderr))

r = replay(os.path.join(HERE, "crash"))
check(r.returncode != 0 and "fuzz_selftest: deliberate crash" in r.stderr
      and "crash/crash.in" in r.stderr,
      "a crashing input fails the replay, and the input is named", (r.returncode, r.stderr))

r = replay(os.path.join(HERE, "ok"), os.path.join(HERE, "crash"))
check(r.returncode != 0, "one crashing input among harmless ones fails the replay",
      (r.returncode, r.stderr))

if sanitized():
    r = replay(os.path.join(HERE, "leak"))
    check(r.returncode != 0 and "LeakSanitizer" in r.stderr,
          "a leaking input fails the replay (LeakSanitizer)", (r.returncode, r.stderr[-2000:]))
else:
    skip_part("not a sanitizer build: the leak case needs LeakSanitizer (make check builds one)")

with tempfile.TemporaryDirectory() as empty:
    r = replay(empty)
    check(r.returncode != 0 and "no inputs" in r.stderr,
          "an empty corpus fails: it replays nothing", (r.returncode, r.stderr))

r = replay(os.path.join(HERE, "no-such-dir"))
check(r.returncode != 0, "a missing corpus fails", (r.returncode, r.stderr))
done()
