"""Installing (docs/building.md, "Installing"): tools/install_tree.sh (what
`make install` / `make uninstall` run) into a temporary DESTDIR lists the
binary, every man page and the three completion scripts; uninstall leaves
nothing, and never a file it did not put there; install.sh twice in a
temporary prefix gives the same files and refuses what it cannot check;
an install build links no test library; tools/mkdeb.sh (`make deb`) builds
a package whose Depends the host meets, which installs into a clean
`dpkg --root` and runs."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import BUILD, SRC, Sandbox, check, done, skip_part  # noqa: E402

TREE = os.path.join(SRC, "tools", "install_tree.sh")


def sh(*args, env=None, cwd=None, timeout=300):
    return subprocess.run(["sh", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout)


def listing(root):
    """Every path under root, relative, directories with a trailing '/'."""
    out = set()
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        for x in dirs:
            out.add(os.path.normpath(os.path.join(rel, x)) + "/")
        for x in files:
            out.add(os.path.normpath(os.path.join(rel, x)))
    return out


def file_digests(root):
    out = {}
    for p in listing(root):
        if not p.endswith("/"):
            with open(os.path.join(root, p), "rb") as f:
                out[p] = hash(f.read())
    return out


with Sandbox() as sb:
    pages = sorted(os.listdir(os.path.join(BUILD, "man")))
    check(len(pages) > 40 and "agentstack.1" in pages, f"the build wrote {len(pages)} pages")
    want_files = ({"bin/agentstack", "share/agentstack/installed-files",
                   "share/bash-completion/completions/agentstack",
                   "share/zsh/vendor-completions/_agentstack",
                   "share/fish/vendor_completions.d/agentstack.fish"} |
                  {f"share/man/man1/{p}" for p in pages})

    # ---- make install / make uninstall ----
    dest = os.path.join(sb.root, "dest")
    os.makedirs(dest)
    r = sh(TREE, "install", BUILD, "/usr/local", dest)
    check(r.returncode == 0, "install into DESTDIR: exit 0", r.stderr)
    prefix = os.path.join(dest, "usr", "local")
    got = {p for p in listing(prefix) if not p.endswith("/")}
    check(got == want_files, f"DESTDIR holds exactly the {len(want_files)} files",
          sorted(got ^ want_files))
    check(all(p.startswith("usr/") for p in listing(dest)), "nothing outside PREFIX")
    r = subprocess.run([os.path.join(prefix, "bin", "agentstack"), "--version"],
                       capture_output=True, text=True, env=sb.env())
    check(r.returncode == 0 and r.stdout.startswith("agentstack "), "the installed binary runs",
          r.stdout + r.stderr)
    with open(os.path.join(prefix, "share/bash-completion/completions/agentstack")) as f:
        check("complete -F _agentstack agentstack" in f.read(), "the bash script installed")
    st = os.stat(os.path.join(prefix, "bin", "agentstack"))
    check(st.st_mode & 0o777 == 0o755, "the binary is 0755", oct(st.st_mode))
    before = file_digests(dest)
    r = sh(TREE, "install", BUILD, "/usr/local", dest)
    check(r.returncode == 0 and file_digests(dest) == before, "a second install: the same files")
    r = sh(TREE, "uninstall", "/usr/local", dest)
    check(r.returncode == 0, "uninstall: exit 0", r.stderr)
    check(listing(dest) == set(), "uninstall after two installs leaves nothing",
          sorted(listing(dest)))
    r = sh(TREE, "uninstall", "/usr/local", dest)
    check(r.returncode == 1 and "nothing recorded" in r.stderr, "uninstall again: says so",
          r.stderr)

    # what was there before stays
    dest2 = os.path.join(sb.root, "dest2")
    mine = os.path.join(dest2, "usr", "share", "man", "man1", "other.1")
    os.makedirs(os.path.dirname(mine))
    with open(mine, "w") as f:
        f.write(".TH OTHER 1\n")
    theirs = os.path.join(dest2, "usr", "bin", "agentstack-helper")
    os.makedirs(os.path.dirname(theirs))
    with open(theirs, "w") as f:
        f.write("#!/bin/sh\n")
    r = sh(TREE, "install", BUILD, "/usr", dest2)
    r2 = sh(TREE, "uninstall", "/usr", dest2)
    check(r.returncode == 0 and r2.returncode == 0, "install + uninstall beside other files")
    check(listing(dest2) == {"usr/", "usr/share/", "usr/share/man/", "usr/share/man/man1/",
                             "usr/share/man/man1/other.1", "usr/bin/",
                             "usr/bin/agentstack-helper"},
          "uninstall removes exactly what install put", sorted(listing(dest2)))
    r = sh(TREE, "install", BUILD, "relative/prefix", dest2)
    check(r.returncode == 1 and "absolute" in r.stderr, "a relative PREFIX: refused", r.stderr)

    # ---- install.sh ----
    inst = os.path.join(SRC, "install.sh")
    p = os.path.join(sb.root, "prefix")
    r1 = sh(inst, "--prefix", p, "--build", BUILD, env=sb.env())
    first = file_digests(p)
    r2 = sh(inst, "--prefix", p, "--build", BUILD, env=sb.env())
    check(r1.returncode == 0 and r2.returncode == 0, "install.sh twice: exit 0 both times",
          r1.stderr + r2.stderr)
    check(set(first) == want_files and file_digests(p) == first,
          "install.sh twice: the same files, the same bytes", sorted(set(first) ^ want_files))
    r = subprocess.run([os.path.join(p, "bin", "agentstack"), "--version"],
                       capture_output=True, text=True, env=sb.env())
    check(r.returncode == 0, "install.sh: the binary runs from the prefix", r.stderr)
    r = sh(TREE, "uninstall", p)
    check(r.returncode == 0 and listing(p) == set(), "and uninstall empties the prefix",
          sorted(listing(p)))

    tarball = os.path.join(sb.root, "src.tar")
    with open(tarball, "wb") as f:
        f.write(b"not a tarball")
    p2 = os.path.join(sb.root, "prefix2")
    r = sh(inst, "--source", "file://" + tarball, "--prefix", p2, env=sb.env())
    check(r.returncode == 1 and "without --sha256" in r.stderr,
          "install.sh: a URL without a checksum is refused", r.stderr)
    r = sh(inst, "--source", "file://" + tarball, "--sha256", "0" * 64, "--prefix", p2,
           env=sb.env())
    check(r.returncode == 1 and "checksum mismatch" in r.stderr,
          "install.sh: a wrong checksum is refused", r.stderr)
    r = sh(inst, "--source", "http://127.0.0.1:9/x.tar", "--sha256", "0" * 64, "--prefix", p2,
           env=sb.env())
    check(r.returncode == 1 and "only https:// and file://" in r.stderr,
          "install.sh: a plain-http URL is refused", r.stderr)
    r = sh(inst, "--deb", "file://" + tarball, env=sb.env())
    check(r.returncode == 1 and ("without --sha256" in r.stderr or "as root" in r.stderr),
          "install.sh: a .deb URL without a checksum is refused", r.stderr)
    check(not os.path.exists(p2), "nothing was installed by a refused run")

    # ---- an install build needs no test library ----
    cfg = os.path.join(sb.root, "cfg")
    r = subprocess.run(["cmake", "-S", SRC, "-B", cfg, "-DCMAKE_BUILD_TYPE=Release",
                        "-DAS_TESTS=OFF"], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "configure with AS_TESTS=OFF", r.stderr[-2000:])
    linked = []
    for d, _, files in os.walk(os.path.join(cfg, "CMakeFiles")):
        for x in files:
            if x == "link.txt":
                with open(os.path.join(d, x)) as f:
                    if "cmocka" in f.read():
                        linked.append(d)
    check(os.path.isdir(os.path.join(cfg, "CMakeFiles", "agentstack.dir")) and not linked,
          "an install build links nothing against cmocka", linked)
    n = subprocess.run(["ctest", "-N"], cwd=cfg, capture_output=True, text=True)
    check("Total Tests: 0" in n.stdout, "and registers no test", n.stdout[-300:])

    # ---- make deb ----
    if os.geteuid() != 0 or not shutil.which("dpkg-deb") or not shutil.which("dpkg-shlibdeps"):
        skip_part("make deb needs root, dpkg-deb and dpkg-shlibdeps (apt-get install dpkg-dev "
                  "fakeroot)")
    else:
        out = os.path.join(sb.root, "deb")
        r = sh(os.path.join(SRC, "tools", "mkdeb.sh"), BUILD, out, cwd=SRC, timeout=600)
        check(r.returncode == 0, "mkdeb: exit 0", r.stderr)
        deb = r.stdout.strip()
        info = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"],
                              capture_output=True, text=True).stdout
        dep = re.search(r"^Depends: (.*)$", info, re.M)
        deps = [d.strip() for d in dep.group(1).split(",")] if dep else []
        names = [d.split(" ")[0] for d in deps]
        check(all(n in names for n in ("libc6", "libjansson4", "libyaml-0-2", "libssl3",
                                       "libidn2-0", "libcurl4")),
              "Depends: the linked libraries (dpkg-shlibdeps) and the dlopened ones", deps)
        check("libcmocka0" not in names, "Depends names no test library", deps)
        unmet = []
        for d in deps:
            m = re.match(r"^(\S+)(?: \((>=) (\S+)\))?$", d)
            q = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", m.group(1)],
                               capture_output=True, text=True)
            ok = q.returncode == 0 and q.stdout
            if ok and m.group(3):
                ok = subprocess.run(["dpkg", "--compare-versions", q.stdout, "ge",
                                     m.group(3)]).returncode == 0
            if not ok:
                unmet.append(d)
        check(not unmet, "this Debian 12 machine meets every Depends", unmet)
        contents = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True,
                                  text=True).stdout
        paths = {ln.split()[-1].lstrip(".") for ln in contents.splitlines()}
        check("/usr/bin/agentstack" in paths and
              "/usr/share/zsh/vendor-completions/_agentstack" in paths and
              "/usr/share/man/man1/agentstack-apply.1.gz" in paths,
              "the package holds the binary, completions and gzipped pages")

        root = os.path.join(sb.root, "root")
        for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates"):
            os.makedirs(os.path.join(root, d))
        open(os.path.join(root, "var/lib/dpkg/status"), "w").close()
        r = subprocess.run(["dpkg", "--root", root, "-i", deb], capture_output=True,
                           text=True)
        check(r.returncode != 0 and "libjansson4" in r.stdout + r.stderr,
              "an empty root: dpkg names the unmet Depends", (r.stdout + r.stderr)[-500:])
        r = subprocess.run(["dpkg", "--root", root, "--force-depends", "-i", deb],
                           capture_output=True, text=True)
        check(r.returncode == 0, "dpkg --root --force-depends -i: installed", r.stderr[-500:])
        r = subprocess.run([os.path.join(root, "usr", "bin", "agentstack"), "--version"],
                           capture_output=True, text=True, env=sb.env())
        check(r.returncode == 0 and r.stdout.startswith("agentstack "),
              "the packaged binary runs: " + r.stdout.strip(), r.stderr)
        r = subprocess.run(["dpkg", "--root", root, "--force-depends", "-r", "agentstack"],
                           capture_output=True, text=True)
        check(r.returncode == 0 and not os.path.exists(os.path.join(root, "usr", "bin",
                                                                    "agentstack")),
              "dpkg -r removes it", r.stderr[-500:])

done()
