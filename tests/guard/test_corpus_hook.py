"""The host guard's corpus (tests/guard/corpus.txt) through the real
binary: `agentstack guard check --protocol P` reading each dialect's JSON
on stdin, answering in that dialect. unit/guard/test_corpus.c judges every
entry in every dialect in-process; this test runs the review's attacks
(the corpus's first section) through the claude and codex hooks (the two
the review used) and every 40th entry through all seven, so the process,
stdin and reply paths are exercised on the same corpus. A wrong verdict
prints the line and the reason. ctest runs it as CTEST_SHARDS entries
(guard/test_corpus_hook/1 ... /N, aslib.shard), each judging every N-th
selected entry, side by side under `ctest -j`; run by hand it judges all."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from guardlib import (PROTOCOLS, Fixture, corpus, denied, hook, reason,  # noqa: E402
                      shell_payload, tool_payload)
from aslib import check, done, shard  # noqa: E402

CTEST_SHARDS = 2

fx = Fixture()
wrong = []
judged = 0
try:
    rows = corpus()
    check(len(rows) >= 240, f"corpus has {len(rows)} entries (the review's ~40 and 200 more)")
    with open(os.path.join(os.path.dirname(__file__), "corpus.txt")) as f:
        first = next(i for i, line in enumerate(f, 1) if line.startswith("# ---- working"))
    picked = [(k, row) for k, row in enumerate(rows) if row[0] <= first or k % 40 == 0]
    for k, (n, verdict, kind, text) in shard(picked):
        text = fx.subst(text)
        for proto in (PROTOCOLS if k % 40 == 0 else ("claude", "codex")):
            if kind == "shell":
                payload = shell_payload(proto, fx.ws, text)
            else:
                payload = tool_payload(proto, fx.ws, kind, text)
                if payload is None:
                    continue
            r = hook(fx, payload, proto)
            judged += 1
            try:
                got = denied(proto, r)
            except (AssertionError, ValueError, KeyError) as e:
                wrong.append(f"corpus.txt:{n} [{proto}] unreadable answer: {e}")
                continue
            if got != (verdict == "DENY"):
                wrong.append(f"corpus.txt:{n} [{proto}] {verdict} expected, got "
                             f"{'DENY' if got else 'ALLOW'}: {text!r}\n"
                             f"     {reason(proto, r)[:300]}")
            elif got and not reason(proto, r).startswith("agentstack guard blocked this: "):
                wrong.append(f"corpus.txt:{n} [{proto}] reason lacks the prefix")
    for w in wrong:
        print("FAIL " + w)
    check(not wrong, f"{judged} judgments in {len(PROTOCOLS)} dialects, "
                     f"{len(wrong)} wrong")
finally:
    fx.close()
done()
