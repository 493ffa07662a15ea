#!/usr/bin/env python3
"""The module stack, enforced: every edge between modules must be declared.

CMakeLists.txt declares, per module under src/, the modules it may use
(`set(AS_DEPS_<module> ...)`), in the order of `AS_MODULES`. This check
fails on any edge that declaration does not allow — an upward or sideways
dependency — found two ways:

  includes  every `#include "<module>/..."` line in src/<module>/ (and in the
            files of a library carved out of a directory, such as the CLI's
            parser) must name the module itself or one it may use;
  names     no two modules have a source file (.c) of the same name: where
            two modules hold a file for the same idea, each name carries its
            module's prefix (docs/architecture.md "File names"), so a stack
            trace, a grep hit or an object file names its module;
  symbols   with --lib, every undefined symbol of a module's static library
            that another module's library defines must come from a module it
            may use (what the linker would otherwise resolve silently,
            e.g. through a hand-written extern declaration).

"May use" is the transitive closure of the declared lists. The declaration
itself must be acyclic and follow AS_MODULES (a module uses only modules
listed before it). src/cli is the top: it may use every module.

usage: check_layers.py --root DIR [--unit NAME=FILE,FILE...] [--lib NAME=LIB.a ...]
Exit 0 when clean; 1 with one line per offending edge.
"""
import argparse
import os
import re
import subprocess
import sys


def cmake_decls(path):
    text = open(path, encoding="utf-8").read()
    deps = {m: v.split() for m, v in re.findall(r'^set\(AS_DEPS_(\w+)\s*"?([^")]*)"?\)', text,
                                                  re.M)}
    order = re.search(r"^set\(AS_MODULES ([^)]*)\)", text, re.M)
    if not order:
        sys.exit("check_layers: no set(AS_MODULES ...) in " + path)
    return deps, order.group(1).split()


def closure(deps):
    out = {}

    def visit(m, seen):
        if m in out:
            return out[m]
        if m in seen:
            raise ValueError("cycle through " + " -> ".join(seen + [m]))
        acc = set()
        for d in deps.get(m, []):
            acc.add(d)
            acc |= visit(d, seen + [m])
        out[m] = acc
        return acc

    for m in deps:
        visit(m, [])
    return out


INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def include_edges(files, modules):
    """(file, line, module) for every #include of a module header."""
    for f in files:
        text = open(f, encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            if m.group(1) in modules:
                yield f, text.count("\n", 0, m.start()) + 1, m.group(1)


def nm(lib):
    """(defined, undefined) global symbol names of a static library."""
    out = subprocess.run(["nm", "-g", "-P", lib], capture_output=True, text=True, check=True)
    defined, undefined = set(), set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0].endswith(":"):
            continue  # "lib.a[obj.o]:" member headers
        name, kind = parts[0], parts[1]
        if kind in ("U", "w", "v"):
            undefined.add(name)
        else:
            defined.add(name)
    return defined, undefined - defined


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="the source tree (holds CMakeLists.txt)")
    ap.add_argument("--unit", action="append", default=[],
                    help="NAME=FILE,FILE: a library made of these files (AS_DEPS_NAME applies)")
    ap.add_argument("--lib", action="append", default=[], help="NAME=PATH of a static library")
    a = ap.parse_args()

    deps, order = cmake_decls(os.path.join(a.root, "CMakeLists.txt"))
    problems = []
    try:
        allowed = closure(deps)
    except ValueError as e:
        print(f"check_layers: the declared modules have a {e}")
        return 1
    for i, m in enumerate(order):
        for d in deps.get(m, []):
            if d not in order[:i]:
                problems.append(f"CMakeLists.txt: AS_DEPS_{m} names {d}, which is not listed "
                                f"before {m} in AS_MODULES")
    modules = set(order)
    allowed["cli"] = set(order)

    # which files belong to which unit: a module's directory, minus the files
    # a carved-out unit claims
    units = {}
    claimed = set()
    for spec in a.unit:
        name, files = spec.split("=", 1)
        paths = [os.path.join(a.root, f) if not os.path.isabs(f) else f
                 for f in files.split(",") if f]
        units[name] = paths
        claimed |= {os.path.realpath(p) for p in paths}
        if name not in deps:
            problems.append(f"CMakeLists.txt: no AS_DEPS_{name} for the unit {name}")
    for m in order + ["cli"]:
        d = os.path.join(a.root, "src", m)
        if os.path.isdir(d):
            units[m] = [os.path.join(d, f) for f in sorted(os.listdir(d))
                        if f.endswith((".c", ".h")) and
                        os.path.realpath(os.path.join(d, f)) not in claimed]

    seen = {}
    for m in order + ["cli"]:
        for f in units.get(m, []):
            if f.endswith(".c"):
                seen.setdefault(os.path.basename(f), []).append(os.path.relpath(f, a.root))
    for name, where in sorted(seen.items()):
        if len(where) > 1:
            problems.append(f"{where[0]}: the file name {name} is also used by "
                            f"{', '.join(where[1:])}: give each its module's prefix")

    for unit, files in sorted(units.items()):
        may = allowed.get(unit, set())
        mine = {os.path.realpath(f) for f in files}
        for f, line, used in include_edges(files, modules | {"cli"}):
            home = os.path.basename(os.path.dirname(f))
            if used == home:
                if unit == home:
                    continue  # a module's own headers
                # a library carved out of a directory may include only its
                # own headers there, not the rest of the directory
                text = open(f, encoding="utf-8", errors="replace").read().splitlines()[line - 1]
                hdr = re.search(r'"([^"]+)"', text).group(1)
                if os.path.realpath(os.path.join(a.root, "src", hdr)) in mine:
                    continue
            elif used in may:
                continue
            problems.append(f"{os.path.relpath(f, a.root)}:{line}: {unit} includes {used}/, "
                            f"which AS_DEPS_{unit} does not allow (allowed: "
                            f"{' '.join(sorted(may)) or 'none'})")

    libs, paths = {}, {}
    for spec in a.lib:
        name, path = spec.split("=", 1)
        paths[name] = path
        libs[name] = nm(path)
    owner = {}
    for name, (defined, _) in libs.items():
        for s in defined:
            owner.setdefault(s, name)
    for name, (_, undefined) in sorted(libs.items()):
        may = allowed.get(name, set())
        for s in sorted(undefined):
            o = owner.get(s)
            if o and o != name and o not in may:
                problems.append(f"{os.path.basename(paths[name])}: {name} uses {s} from {o}, "
                                f"which AS_DEPS_{name} does not allow")

    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s): edges against the declared module "
              f"order (CMakeLists.txt AS_DEPS_*) or file names two modules share")
        return 1
    print(f"check_layers: {sum(len(f) for f in units.values())} files and {len(libs)} "
          f"libraries follow the declared order, no file name shared")
    return 0


if __name__ == "__main__":
    sys.exit(main())
