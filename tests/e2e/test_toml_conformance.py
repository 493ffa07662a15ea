"""TOML 1.0.0 conformance: every case of the toml-test corpus listed in
tests/files-toml-1.0.0, run through $AS_BUILD/toml-decode.

valid/*.toml must decode to the tagged JSON in the matching .json (compared
structurally: floats by value with inf/nan spellings, integers by value,
datetimes by their normalized text); invalid/*.toml must exit 1 with a
"<stdin>:line:col: what" message on stderr and nothing on stdout.

Every file goes through `toml-decode --batch` (one process: the decoder's
own function per file, exit status and both outputs kept apart), and every
20th file also through the stdin interface itself, which must give the same
exit status and bytes — so the interface is what is checked, without a
sanitizer start-up per file.
"""
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aslib import BUILD, DATA, check, done  # noqa: E402

CORPUS = os.path.join(DATA, "toml-test", "tests")
DECODE = os.path.join(BUILD, "toml-decode")
ERR_RE = re.compile(r"^toml-decode: <stdin>:\d+:\d+: \S")
DT_TYPES = ("datetime", "datetime-local", "date-local", "time-local")


def is_leaf(x):
    return (isinstance(x, dict) and set(x) == {"type", "value"}
            and isinstance(x["value"], str))


def fnum(s):
    s = s.strip().lower()
    if s in ("inf", "+inf"):
        return math.inf
    if s == "-inf":
        return -math.inf
    if s in ("nan", "+nan", "-nan"):
        return math.nan
    return float(s.replace("_", ""))


def norm_dt(s):
    """toml-test compares datetimes as instants/values: normalize the
    separator and Z, and the fractional seconds' trailing zeros."""
    s = s.upper()
    if len(s) > 10 and s[10] == " ":
        s = s[:10] + "T" + s[11:]
    m = re.match(r"^(.*\d\d:\d\d:\d\d)(\.\d+)?(.*)$", s)
    if m:
        frac = (m.group(2) or "").rstrip("0")
        if frac == ".":
            frac = ""
        s = m.group(1) + frac + m.group(3)
    return s


def same(exp, got, where="$"):
    """Returns None when equal, else a description of the first difference."""
    if is_leaf(exp):
        if not is_leaf(got):
            return f"{where}: expected a {exp['type']} value, got {json.dumps(got)[:80]}"
        if exp["type"] != got["type"]:
            return f"{where}: type {got['type']} != {exp['type']}"
        a, b = exp["value"], got["value"]
        t = exp["type"]
        if t == "float":
            x, y = fnum(a), fnum(b)
            ok = (math.isnan(x) and math.isnan(y)) or x == y
        elif t == "integer":
            ok = int(a) == int(b)
        elif t in DT_TYPES:
            ok = norm_dt(a) == norm_dt(b)
        else:
            ok = a == b
        return None if ok else f"{where}: {t} {b!r} != {a!r}"
    if isinstance(exp, dict):
        if not isinstance(got, dict) or is_leaf(got):
            return f"{where}: expected a table"
        if set(exp) != set(got):
            return (f"{where}: keys differ: missing {sorted(set(exp) - set(got))}, "
                    f"extra {sorted(set(got) - set(exp))}")
        for k in exp:
            d = same(exp[k], got[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(exp, list):
        if not isinstance(got, list) or len(exp) != len(got):
            return f"{where}: expected an array of {len(exp)}"
        for i, (e, g) in enumerate(zip(exp, got)):
            d = same(e, g, f"{where}[{i}]")
            if d:
                return d
        return None
    return f"{where}: unexpected expected-value {exp!r}"


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr

    def __eq__(self, o):
        return (self.returncode, self.stdout, self.stderr) == (o.returncode, o.stdout, o.stderr)

    def __repr__(self):
        return f"exit {self.returncode}, stdout {self.stdout[:80]!r}, stderr {self.stderr[:80]!r}"


def decode(path):
    """The stdin interface, one process."""
    with open(path, "rb") as f:
        data = f.read()
    r = subprocess.run([DECODE], input=data, capture_output=True, timeout=30)
    return Result(r.returncode, r.stdout, r.stderr)


def decode_batch(paths):
    """path -> Result for every path, from one `toml-decode --batch`."""
    r = subprocess.run([DECODE, "--batch", *paths], capture_output=True, timeout=600)
    out, pos, results = r.stdout, 0, {}
    for p in paths:
        nl = out.index(b"\n", pos)
        tag, rc, no, ne = out[pos:nl].split(b" ")
        assert tag == b"==", out[pos:nl]
        pos = nl + 1
        so = out[pos:pos + int(no)]
        pos += int(no)
        results[p] = Result(int(rc), so, out[pos:pos + int(ne)])
        pos += int(ne)
    assert r.returncode == 0 and pos == len(out), (r.returncode, r.stderr[-500:])
    return results


def main():
    with open(os.path.join(CORPUS, "files-toml-1.0.0")) as f:
        files = [ln.strip() for ln in f if ln.strip().endswith(".toml")]
    valid = [p for p in files if p.startswith("valid/")]
    invalid = [p for p in files if p.startswith("invalid/")]
    check(os.access(DECODE, os.X_OK), f"decoder exists at {DECODE}")
    check(len(valid) > 100 and len(invalid) > 400, "corpus list is complete",
          f"{len(valid)} valid, {len(invalid)} invalid")

    results = decode_batch([os.path.join(CORPUS, rel) for rel in valid + invalid])
    sample = (valid + invalid)[::20]
    differ = [rel for rel in sample
              if decode(os.path.join(CORPUS, rel)) != results[os.path.join(CORPUS, rel)]]
    check(len(sample) > 30 and not differ,
          f"the stdin interface gives the batch's exit status and bytes ({len(sample)} files)",
          differ)

    vpass = 0
    for rel in valid:
        r = results[os.path.join(CORPUS, rel)]
        why = None
        if r.returncode != 0:
            why = f"exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}"
        else:
            try:
                got = json.loads(r.stdout)
                with open(os.path.join(CORPUS, rel[:-5] + ".json")) as f:
                    exp = json.load(f)
                why = same(exp, got)
            except ValueError as e:
                why = f"bad JSON output: {e}"
        vpass += why is None
        check(why is None, f"valid {rel}", why or "")

    ipass = 0
    for rel in invalid:
        r = results[os.path.join(CORPUS, rel)]
        err = r.stderr.decode(errors="replace")
        ok = r.returncode == 1 and not r.stdout and ERR_RE.match(err)
        ipass += bool(ok)
        check(ok, f"invalid {rel}",
              f"exit {r.returncode}, stdout {r.stdout[:120]!r}, stderr {err.strip()[:200]!r}")

    print(f"valid {vpass}/{len(valid)}, invalid {ipass}/{len(invalid)}")
    done()


if __name__ == "__main__":
    main()
