"""Toolset leases (docs/gateway.md, "Leases"): a lease over
--manifest-dir, in-memory skill loads, status, freeze into the manifest with
the format-preserving editor, close, and zero native artifacts; skills fenced
to the leased toolset, inline and central-library origins, pinned bytes."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402
from mcpclient import Gateway, is_error, payload, text  # noqa: E402

REVIEW = "---\nname: review-checklist\ndescription: Review checklist for backend changes\n" \
         "---\n# Review checklist\n- tests\n- docs\n"

LEASE_MANIFEST = """# the team's manifest — this comment must survive the freeze
version = 1

[skills.review-checklist]
path = "skills/review-checklist"

[toolsets.backend]
servers = []
skills = ["review-checklist"]
"""


def artifacts(sb):
    found = []
    for rel in (".mcp.json", ".claude/skills", "sessions.json", ".agentstack/sessions.json"):
        if os.path.exists(os.path.join(sb.project, rel)):
            found.append(rel)
    if os.path.exists(os.path.join(sb.ah, "sessions.json")):
        found.append("~/.agentstack/sessions.json")
    return found


def lease_demo():
    with Sandbox() as sb:
        sb.write(".agentstack/agentstack.toml", LEASE_MANIFEST)
        sb.write(".agentstack/skills/review-checklist/SKILL.md", REVIEW)
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "4: lock --write", r.stderr)
        mdir = os.path.join(sb.project, ".agentstack")
        with Gateway(sb, "--manifest-dir", mdir) as g:
            g.initialize()
            o = g.call("agentstack_lease_open", {"profile": "backend"})
            p = payload(o)
            check(p["opened"] == "backend" and p["native_files_written"] is False and
                  p["delivery"] == "mcp" and p["lifetime"] == "this MCP process",
                  "4: open → opened backend, no native files", p)
            check(list(p) == ["opened", "delivery", "lifetime", "native_files_written",
                              "instance", "registry_note", "note"], "4: open keys in order")
            check('"opened": "backend"' in text(o), "4: pretty JSON (scripts grep it)")
            recs = os.listdir(os.path.join(sb.ah, "leases"))
            check(len(recs) == 1 and recs[0] == p["instance"] + ".json",
                  "4: a lease record under $AGENTSTACK_HOME/leases", recs)
            lst = payload(g.call("agentstack_list_loadable", {}))
            names = [e["name"] for e in lst["loadable"]]
            check(names == ["using-agentstack", "review-checklist"] and lst["fenced"] and
                  lst["lease"] == "backend" and lst["session"] is None,
                  "4: list shows the skill, fenced to the lease", lst)
            rc = [e for e in lst["loadable"] if e["name"] == "review-checklist"][0]
            check(rc["pinned"] is True and rc["loaded"] is False and rc["origin"] == "manifest"
                  and rc["description"] == "Review checklist for backend changes",
                  "4: entry fields", rc)
            descs = g.request("tools/list")["result"]["tools"]
            ll = [t for t in descs if t["name"] == "agentstack_list_loadable"][0]
            check("Loadable now:" in ll["description"] and
                  "- review-checklist — Review checklist" in ll["description"],
                  "4: the ambient index is in list_loadable's description", ll["description"])
            ld = payload(g.call("agentstack_load", {"name": "review-checklist",
                                                    "reason": "reviewing a PR"}))
            check(ld["loaded"] == "review-checklist" and ld["newly_loaded"] is True and
                  ld["sticky"] is True and ld["fenced"] is True and ld["lease"] == "backend",
                  "4: load → newly_loaded true", ld)
            check(ld["instructions"] == REVIEW, "4: the loaded bytes are the pinned source")
            ld2 = payload(g.call("agentstack_load", {"name": "review-checklist",
                                                     "reason": "again"}))
            check(ld2["newly_loaded"] is False, "4: twice → newly_loaded false")
            st = payload(g.call("agentstack_lease_status", {}))
            check(st["active"] is True and st["profile"] == "backend" and
                  len(st["loads"]) == 1 and st["loads"][0]["reason"] == "reviewing a PR" and
                  st["native_files_written"] is False, "4: status: one load, first reason", st)
            fr = g.call("agentstack_lease_freeze", {"name": "backend-observed"})
            check(not is_error(fr) and "backend-observed" in text(fr) and
                  "agentstack lock" in text(fr), "4: freeze names it and agentstack lock",
                  text(fr))
            dup = g.call("agentstack_lease_freeze", {"name": "backend-observed"})
            check(is_error(dup) and "already exists" in text(dup), "4: freeze refuses a taken name")
            cl = payload(g.call("agentstack_lease_close", {}))
            check(cl["closed"] == "backend" and cl["native_restore_needed"] is False and
                  cl["loaded_skills"] == ["review-checklist"], "4: close", cl)
            again = g.call("agentstack_lease_close", {})
            check(is_error(again) and "no active MCP toolset lease" in text(again),
                  "4: close without a lease")
            check(g.close() == 0, "4: EOF → exit 0")
        with open(os.path.join(mdir, "agentstack.toml")) as f:
            m = f.read()
        check("[toolsets.backend-observed]" in m and 'skills = ["review-checklist"]' in m,
              "4: manifest has [toolsets.backend-observed]", m)
        check(m.startswith(LEASE_MANIFEST), "4: every other byte of the manifest kept")
        check(artifacts(sb) == [], "4: no .mcp.json, .claude/skills, sessions.json",
              artifacts(sb))
        check(os.listdir(os.path.join(sb.ah, "leases")) == [], "4: the lease record is gone")


DOCS_MANIFEST = """version = 1

[skills.api-conventions]
path = "skills/api-conventions"

[skills.release-checklist]
path = "skills/release-checklist"

[toolsets.docs]
skills = ["api-conventions", "sql-review"]
"""

API = "---\ndescription: REST naming and pagination rules\n---\nUse plural nouns.\n"
SQL = "---\ndescription: Checks migrations for locking hazards\n---\nLook for ALTER.\n"
REL = "---\ndescription: Steps before tagging\n---\nTag it.\n"


def docs_lease():
    with Sandbox() as sb:
        sb.write("agentstack.toml", DOCS_MANIFEST)
        sb.write("skills/api-conventions/SKILL.md", API)
        sb.write("skills/release-checklist/SKILL.md", REL)
        sb.write("lib/skills/sql-review/SKILL.md", SQL, base=sb.ah)
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "5: lock --write", r.stdout + r.stderr)
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            g.initialize()
            g.call("agentstack_lease_open", {"profile": "docs"})
            lst = payload(g.call("agentstack_list_loadable", {}))
            got = {e["name"]: e["origin"] for e in lst["loadable"]}
            check(got == {"using-agentstack": "builtin", "api-conventions": "manifest",
                          "sql-review": "library"}, "5: list = those + manual, origins", got)
            rel = g.call("agentstack_load", {"name": "release-checklist", "reason": "x"})
            check(is_error(rel) and "'release-checklist' is not loadable in toolset 'docs'"
                  in text(rel), "5: declared release-checklist → not loadable", text(rel))
            a = payload(g.call("agentstack_load", {"name": "api-conventions", "reason": "api"}))
            s = payload(g.call("agentstack_load", {"name": "sql-review", "reason": "sql"}))
            check(a["instructions"] == API and a["origin"] == "manifest", "5: inline bytes = source")
            check(s["instructions"] == SQL and s["origin"] == "library",
                  "5: library bytes = source", s)
            st = payload(g.call("agentstack_lease_status", {}))
            check([x["name"] for x in st["loads"]] == ["api-conventions", "sql-review"],
                  "5: release-checklist is not in the trail", st)
            q = payload(g.call("agentstack_list_loadable", {"query": "  LOCKING "}))
            check([e["name"] for e in q["loadable"]] == ["sql-review"],
                  "5: a description-word query hits", q)
            miss = g.call("agentstack_list_loadable", {"query": "kubernetes"})
            check(text(miss) == "No loadable skills match 'kubernetes'.", "5: a miss", text(miss))
            g.close()
        # drift: a body edited after the lock is refused, not served
        with open(os.path.join(sb.project, "skills/api-conventions/SKILL.md"), "a") as f:
            f.write("injected line\n")
        with Gateway(sb, "--manifest-dir", sb.project) as g:
            g.initialize()
            g.call("agentstack_lease_open", {"profile": "docs"})
            d = g.call("agentstack_load", {"name": "api-conventions", "reason": "api"})
            check(is_error(d) and "drifted from agentstack.lock" in text(d) and
                  "agentstack lock --write" in text(d), "5: drifted body refused", text(d))
            g.close()
        with open(os.path.join(sb.ah, "audit", "loads.jsonl")) as f:
            loads = [json.loads(x) for x in f if x.strip()]
        check([x["name"] for x in loads] == ["api-conventions", "sql-review"] and
              loads[0]["reason"] == "api", "5: loads.jsonl records successful loads", loads)


def decisions():
    """Review decisions recorded in trust.json: keep-pinned serves the
    approved copy from the content store; blocked omits the skill."""
    with Sandbox() as sb:
        sb.write("agentstack.toml", "version = 1\n\n[skills.notes]\npath = \"skills/notes\"\n")
        sb.write("skills/notes/SKILL.md", API)
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "decisions: lock", r.stderr)
        j = json.loads(sb.run("trust", ".", "--preview").stdout)
        sb.run("trust", ".", "--yes", "--consented", j["surface_digest"])
        with open(os.path.join(sb.project, "agentstack.lock")) as f:
            pin = [x.split('"')[1] for x in f if x.startswith("checksum")][0]
        with open(os.path.join(sb.project, "skills/notes/SKILL.md"), "a") as f:
            f.write("drifted after review\n")
        tj = os.path.join(sb.ah, "trust.json")

        def decide(answer):
            with open(tj) as f:
                t = json.load(f)
            for e in t["trusted"].values():
                e["decisions"] = [{"kind": "skill", "name": "notes",
                                   "answer": {"answer": answer, "pin": pin}}]
            with open(tj, "w") as f:
                json.dump(t, f)

        decide("keep-pinned")
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            lst = payload(g.call("agentstack_list_loadable", {}))
            e = [x for x in lst["loadable"] if x["name"] == "notes"]
            check(e and e[0]["origin"] == "approved-copy", "keep-pinned: listed as approved copy",
                  lst)
            ld = payload(g.call("agentstack_load", {"name": "notes", "reason": "r"}))
            check(ld["instructions"] == API and ld["origin"] == "approved-copy",
                  "keep-pinned: the approved bytes are served, not the drifted ones", ld)
            decide("blocked")
            lst = payload(g.call("agentstack_list_loadable", {}))
            check("notes" not in [x["name"] for x in lst["loadable"]], "blocked: omitted", lst)
            b = g.call("agentstack_load", {"name": "notes", "reason": "r"})
            check(is_error(b) and "blocked on this machine" in text(b), "blocked: refused",
                  text(b))
            g.close()


def main():
    decisions()
    lease_demo()
    docs_lease()
    done()


main()
