#!/usr/bin/env python3
"""No citations of documents the reader does not have.

The repository stands alone: a comment, a doc, a test or a message may cite
our own docs/*.md or say its reason in place, never a document that is not
in the checkout. This check fails on any tracked text file (third-party data
under tests/data/ excepted) that names one:

  a path beside the checkout      a parent-relative sibling folder
  section and errata labels       the section sign, "errata"
  chapter labels of a spec        "spec 05", "chapter 06", "01-<name>.md"
  a reference version             "0.19"

RFC sections are written "RFC 9110 section 5.5", which passes. This file
and its test (tests/e2e/test_no_outside_citations.py) name the patterns, so
they are not scanned.

usage: check_citations.py [--root DIR] [PATH...]
PATHs (files or directories, relative to the root) narrow the scan; the
default is every file `git ls-files` lists under the root.
Exit 0 when clean; 1 with one `file:line: text` line per citation.
"""
import argparse
import os
import re
import subprocess
import sys

SECTION_SIGN = "\u00a7"
RULES = [
    ("a path outside the checkout", re.compile(r"\.\./" + "shared")),
    ("a section label", re.compile(SECTION_SIGN)),
    ("an errata label", re.compile(r"\b" + "err" + r"ata\b", re.I)),
    ("a spec chapter label", re.compile(r"\bspec\s+0[0-9]\b|\bchapter\s+0?[0-9]\b", re.I)),
    ("a spec chapter file", re.compile(r"\b0[0-9]-[a-z]+(?:-[a-z]+)*\.md\b|\b00-" + "overview\b")),
    ("a reference version", re.compile(r"(?<![\d.])0\.19(?![\d.])")),
]

# Third-party files kept as published (their licences and versions are noted
# in tests/data/README.md); they are not our prose.
EXCLUDED_DIRS = ("tests/data/",)
EXCLUDED_FILES = ("tools/check_citations.py", "tests/e2e/test_no_outside_citations.py")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
            for n in names:
                files.append(os.path.relpath(os.path.join(d, n), root))
        return files


def scan_text(rel, text):
    found = []
    for n, line in enumerate(text.split("\n"), 1):
        for what, rx in RULES:
            if rx.search(line):
                found.append(f"{rel}:{n}: {what}: {line.strip()}")
                break
    return found


def scan(root, only=None):
    found = []
    for rel in sorted(tracked_files(root)):
        rel = rel.replace(os.sep, "/")
        if rel in EXCLUDED_FILES or any(rel.startswith(d) for d in EXCLUDED_DIRS):
            continue
        if only and not any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in only):
            continue
        path = os.path.join(root, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue  # binary
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        found += scan_text(rel, text)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    found = scan(os.path.abspath(a.root), [p.replace(os.sep, "/") for p in a.paths])
    for line in found:
        print(line)
    if found:
        print(f"check_citations: {len(found)} citation(s) of documents that are not in the "
              "repository: cite docs/*.md or say the reason in place", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
