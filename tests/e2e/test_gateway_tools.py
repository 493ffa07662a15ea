"""The control plane's ext tier, read-only: agentstack_list, _explain, _search and _diff on a
trusted and on an untrusted project (names and the trust note only; docs/gateway.md),
no secret value anywhere in any answer, hostile manifest/library text
sanitized; and the sweep of code-mode endpoint dirs left by dead gateways."""
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done, skip_part, write_anchor  # noqa: E402
from mcpclient import FAKE, Gateway, grant, is_error, payload, run_process, text  # noqa: E402

BUILT = ["agentstack_search", "tools_search", "tools_bindings", "agentstack_list",
         "agentstack_doctor", "agentstack_list_loadable", "agentstack_load",
         "agentstack_lease_open", "agentstack_lease_status", "agentstack_lease_close",
         "agentstack_lease_freeze", "agentstack_explain", "agentstack_diff",
         "agentstack_add_skill", "agentstack_create_toolset", "agentstack_session_start",
         "agentstack_session_end", "agentstack_session_list", "agentstack_session_freeze",
         "agentstack_add_server"]

ENV_SECRET = "envsecretvalue7731"
DOTENV_SECRET = "dotenvsecretvalue9924"
LITERAL = "literalenvvalue5150"
URL_PW = "urlpassword3141"
URL_KEY = "urlquerykey2718"
HOSTILE = "\x1b[31m"
BIDI = "\u202e"
ZW = "\u200b"

MACHINE = """version = 1

[policy.tools]
"*" = ["!delete_*"]
"""


def manifest(marker):
    return f"""version = 1
default_toolset = "main"

[servers.opsbox]
type = "stdio"
command = "python3"
args = ["./fake.py", "--tools", "get_status,delete_all", "--marker", "{marker}",
        "--desc", "\\u001b[31mred\\u202eevil"]
env = {{ API_TOKEN = "${{MY_TOKEN}}", LITERAL = "{LITERAL}" }}

[servers.web]
type = "http"
url = "https://bob:{URL_PW}@api.example.com/mcp?key={URL_KEY}"
headers = {{ Authorization = "Bearer ${{WEB_TOKEN}}" }}

[skills.review]
path = "skills/review"

[policy.tools]
opsbox = ["get_*", "delete_*"]

[toolsets.main]
servers = ["opsbox", "web"]
skills = ["review"]
"""


def setup(sb, trusted):
    os.makedirs(sb.ah, exist_ok=True)
    with open(os.path.join(sb.ah, "agentstack.toml"), "w") as f:
        f.write(MACHINE)
    lib = os.path.join(sb.root, "lib")
    sb.write("skills/review-lib/SKILL.md",
             f"---\ndescription: Review {HOSTILE}code{ZW} {BIDI}carefully\n---\nbody\n",
             base=lib)
    r = sb.run("lib", "link", lib, "--write")
    check(r.returncode == 0, "library linked", r.stdout + r.stderr)
    marker = os.path.join(sb.root, "opsbox.started")
    sb.write("agentstack.toml", manifest(marker))
    sb.write("fake.py", FAKE)
    sb.write("skills/review/SKILL.md", "---\ndescription: project review\n---\nbody\n")
    sb.write(".env", f"WEB_TOKEN={DOTENV_SECRET}\n")
    if trusted:
        # The hostile description's controls are a blocking content-scan
        # finding; granted anyway here, to prove the gateway's own filter.
        grant(sb, extra=("--allow-flagged",))
    return marker


def clean(what, s):
    check(ENV_SECRET not in s and DOTENV_SECRET not in s and LITERAL not in s and
          URL_PW not in s and URL_KEY not in s, what + ": no secret value", s)
    check("\x1b" not in s and BIDI not in s and ZW not in s and "\\u001b" not in s and
          "\\u202e" not in s and "\\u200b" not in s, what + ": hostile text removed", repr(s))


def call_all(g, sb, label):
    """Every answer, raw, for the secret/hostile sweep."""
    out = []
    for name, args in (("agentstack_list", {}), ("agentstack_explain", {"name": "opsbox"}),
                       ("agentstack_explain", {"name": "web"}),
                       ("agentstack_explain", {"name": "opsbox__get_status"}),
                       ("agentstack_explain", {"name": "review"}),
                       ("agentstack_explain", {"name": "main"}),
                       ("agentstack_search", {}), ("agentstack_search", {"query": "review"}),
                       ("agentstack_diff", {})):
        r = g.call(name, args)
        out.append(json.dumps(r, ensure_ascii=False))
        clean(f"{label} {name} {args}", text(r))
    clean(label + " raw frames", "\n".join(g.raw))
    return out


def trusted():
    with Sandbox() as sb:
        marker = setup(sb, True)
        env = sb.env(MY_TOKEN=ENV_SECRET)
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            names = g.tools()
            check(names == BUILT, "tools/list: built tools in their documented order", names)
            tools = {t["name"]: t for t in g.request("tools/list", {})["result"]["tools"]}
            check(tools["agentstack_explain"]["inputSchema"].get("required") == ["name"],
                  "explain schema requires name", tools["agentstack_explain"])
            check("query" in tools["agentstack_search"]["inputSchema"]["properties"] and
                  "scope" in tools["agentstack_diff"]["inputSchema"]["properties"] and
                  tools["agentstack_list"]["inputSchema"] ==
                  {"type": "object", "properties": {}}, "search/diff/list schemas")

            lst = payload(g.call("agentstack_list", {}))
            check(set(lst) == {"project", "manifest", "trust", "default_toolset", "lease",
                               "servers", "skills", "toolsets", "secrets_note"},
                  "list: keys", sorted(lst))
            check(lst["trust"] == "trusted" and lst["default_toolset"] == "main",
                  "list: trusted, default", lst)
            ops = next(s for s in lst["servers"] if s["name"] == "opsbox")
            web = next(s for s in lst["servers"] if s["name"] == "web")
            check(set(ops) >= {"name", "type", "command", "env", "secrets", "proxied"} and
                  ops["env"] == ["API_TOKEN", "LITERAL"] and ops["secrets"] == ["MY_TOKEN"],
                  "list: stdio server, env by key, secrets by name", ops)
            check(web["url"] == "https://api.example.com/mcp?…" and
                  web["headers"] == ["Authorization"] and web["secrets"] == ["WEB_TOKEN"],
                  "list: http server without userinfo/query, headers by name", web)
            check(lst["skills"] == [{"name": "review",
                                     "source": {"type": "path", "path": "skills/review"}}],
                  "list: skills with source", lst["skills"])
            check(lst["toolsets"] == [{"name": "main", "servers": ["opsbox", "web"],
                                       "skills": ["review"]}], "list: toolsets", lst)

            e = payload(g.call("agentstack_explain", {"name": "opsbox"}))
            check(e["kind"] == "server" and e["origin"] == "manifest" and
                  e["declared"].endswith("agentstack.toml:4") and e["toolsets"] == ["main"] and
                  e["pin"]["status"] == "matches" and
                  [s["ref"] for s in e["policy"]["secrets"]] == ["MY_TOKEN"] and
                  any("get_*" in r for r in e["policy"]["rows"]),
                  "explain server: declared, pin, secrets decisions, policy rows", e)
            e = payload(g.call("agentstack_explain", {"name": "web"}))
            check(e["policy"]["egress"]["host"] == "api.example.com" and
                  "allow" in e["policy"]["egress"], "explain http server: egress decision", e)
            e = payload(g.call("agentstack_explain", {"name": "opsbox__delete_all"}))
            check(e["kind"] == "tool" and e["policy"]["allow"] is False and
                  e["policy"]["layer"] == "machine" and e["policy"]["rule"] == "!delete_*",
                  "explain tool: machine deny, rule and layer", e)
            e = payload(g.call("agentstack_explain", {"name": "opsbox__list_items"}))
            check(e["policy"]["allow"] is False and e["policy"]["layer"] == "project" and
                  "get_*" in (e["policy"]["rule"] or ""),
                  "explain tool: project allowlist miss", e)
            e = payload(g.call("agentstack_explain", {"name": "opsbox__get_status"}))
            check(e["policy"]["allow"] is True and e["server"] == "opsbox",
                  "explain tool: allowed", e)
            e = payload(g.call("agentstack_explain", {"name": "review"}))
            check(e["kind"] == "skill" and e["pin"]["status"] == "matches" and
                  e["source"]["type"] == "path", "explain skill", e)
            e = payload(g.call("agentstack_explain", {"name": "main"}))
            check(e["kind"] == "toolset" and e["default"] is True, "explain toolset", e)
            r = g.call("agentstack_explain", {"name": "nosuch\x1b[2J"})
            check(is_error(r) and "nothing named" in text(r) and "\x1b" not in text(r),
                  "explain unknown: error, sanitized", text(r))
            r = g.call("agentstack_explain", {})
            check(is_error(r), "explain without a name: error", text(r))

            s = payload(g.call("agentstack_search", {"query": "REVIEW"}))
            check(set(s) >= {"query", "project", "library", "not_searched"},
                  "search: keys", sorted(s))
            check({"kind": "skill", "name": "review"} in s["project"],
                  "search: project hit", s["project"])
            hit = [h for h in s["library"] if h["name"] == "review-lib"]
            check(len(hit) == 1 and hit[0]["kind"] == "skill" and
                  hit[0]["description"] == "Review code carefully" and
                  set(hit[0]) == {"kind", "name", "description", "source", "in_manifest",
                                  "installed_pack"},
                  "search: library hit, description sanitized", s["library"])
            s = payload(g.call("agentstack_search", {"query": "zzznothing"}))
            check(s["project"] == [] and s["library"] == [], "search: no hits", s)

            d = payload(g.call("agentstack_diff", {}))
            check(set(d) >= {"project", "manifest", "trust", "scope", "lock", "pending",
                             "matching", "clean", "next", "blocking"}, "diff: keys", sorted(d))
            check(d["clean"] is True and d["pending"] == [] and d["lock"] == "present",
                  "diff: clean after lock + trust", d)
            sb.write("skills/review/SKILL.md", "---\ndescription: changed\n---\nnew body\n")
            d = payload(g.call("agentstack_diff", {"scope": "skills"}))
            check(d["clean"] is False and [(p["kind"], p["name"], p["status"])
                                           for p in d["pending"]] ==
                  [("skill", "review", "drifted")] and "message" in d["pending"][0] and
                  any("agentstack lock" in n for n in d["next"]),
                  "diff: a drifted skill, with the follow-up", d)
            d = payload(g.call("agentstack_diff", {"scope": "servers"}))
            check(d["pending"] == [], "diff scope=servers leaves the skill out", d)
            r = g.call("agentstack_diff", {"scope": "bogus"})
            check(is_error(r) and "unknown scope" in text(r), "diff: unknown scope", text(r))
            call_all(g, sb, "trusted")
            g.close()
        check(not os.path.exists(marker), "none of these tools spawns a server")
        check(open(os.path.join(sb.project, "agentstack.toml")).read() == manifest(marker),
              "manifest untouched")


def untrusted():
    with Sandbox() as sb:
        marker = setup(sb, False)
        r = sb.run("lock", "--write")
        check(r.returncode == 0, "locked (not trusted)", r.stderr)
        before = sorted(os.listdir(sb.project))
        env = sb.env(MY_TOKEN=ENV_SECRET)
        with Gateway(sb, "--auto-project", env=env) as g:
            g.initialize()
            names = g.tools()
            check(names == BUILT, "untrusted: same tool list", names)
            lst = payload(g.call("agentstack_list", {}))
            check(lst["servers"] == ["opsbox", "web"] and lst["skills"] == ["review"] and
                  lst["toolsets"] == ["main"], "untrusted list: names only", lst)
            check("not trusted" in lst["note"] and "agentstack trust" in lst["note"] and
                  lst["trust"] == "not trusted", "untrusted list: the trust note", lst)
            raw = text(g.call("agentstack_list", {}))
            check("python3" not in raw and "api.example.com" not in raw and
                  "skills/review" not in raw, "untrusted list: no bundle content", raw)
            e = payload(g.call("agentstack_explain", {"name": "opsbox"}))
            check(set(e) == {"name", "kind", "trust", "note"} and e["kind"] == "server",
                  "untrusted explain: kind and the note only", e)
            e = payload(g.call("agentstack_explain", {"name": "opsbox__get_status"}))
            check(set(e) == {"name", "kind", "trust", "note"}, "untrusted explain tool", e)
            d = payload(g.call("agentstack_diff", {}))
            check("note" in d and all("message" not in p for p in d["pending"]) and
                  d["clean"] is False and any("agentstack trust" in n for n in d["next"]),
                  "untrusted diff: statuses, no messages, the trust follow-up", d)
            s = payload(g.call("agentstack_search", {"query": "review"}))
            check({"kind": "skill", "name": "review"} in s["project"] and "note" in s,
                  "untrusted search: names and the note", s)
            call_all(g, sb, "untrusted")
            g.close()
        check(not os.path.exists(marker), "untrusted: nothing spawned")
        check(sorted(os.listdir(sb.project)) == before, "untrusted: no file written")
        check(not os.path.exists(os.path.join(sb.ah, "trust.json")) or
              "proj" not in open(os.path.join(sb.ah, "trust.json")).read(),
              "untrusted: nothing trusted over MCP")


def freeze(sb, run):
    """A protected run's grant.json + its hash-chained events (the shape
    test_gateway_grant checks in depth)."""
    consent = json.loads(sb.run("trust", ".", "--preview").stdout)["surface_digest"]
    ruleset = json.loads(sb.run("policy", "ruleset").stdout)
    d = os.path.join(sb.ah, "runs", run)
    os.makedirs(d, mode=0o700, exist_ok=True)
    g = {"version": 1, "kind": "agentstack-run-grant", "run_id": run, "harness": "claude",
         "project_root": os.path.realpath(sb.project), "manifest_dir": sb.project,
         "manifest": os.path.join(sb.project, "agentstack.toml"), "consent_digest": consent,
         "toolset": "main", "fence": {"servers": ["opsbox"], "skills": ["review"]},
         "servers": {}, "ruleset": ruleset, "argv": ["claude"], "binary": "/usr/bin/claude"}
    data = (json.dumps(g, sort_keys=True, separators=(",", ":")) + "\n").encode()
    path = os.path.join(d, "grant.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, data)
    os.close(fd)
    rows = [{"event": "attempt_started", "ts": 1, "harness": "claude",
             "posture": "host-protected"},
            {"event": "grant_frozen", "ts": 1,
             "grant_digest": "sha256:" + hashlib.sha256(data).hexdigest(), **run_process()}]
    out, prev = [], "0" * 64
    for r in rows:
        r["prev"] = prev
        line = json.dumps(r, separators=(",", ":"))
        out.append(line + "\n")
        prev = hashlib.sha256(line.encode()).hexdigest()
    ev = os.path.join(d, "events.jsonl")
    with open(ev, "w") as f:
        f.write("".join(out))
    os.chmod(ev, 0o600)
    write_anchor(sb.ah, ev)
    return path


def grant_mode():
    with Sandbox() as sb:
        setup(sb, True)
        path = freeze(sb, "r-tools-1")
        env = sb.env(MY_TOKEN=ENV_SECRET)
        with Gateway(sb, "--grant", path, env=env) as g:
            g.initialize()
            lst = payload(g.call("agentstack_list", {}))
            check(lst["trust"] == "served under the run's frozen grant" and
                  isinstance(lst["servers"][0], dict), "grant: list in full", lst)
            e = payload(g.call("agentstack_explain", {"name": "opsbox__delete_all"}))
            check(e["policy"]["allow"] is False and
                  e["policy"].get("ruleset") == "frozen by the run's grant",
                  "grant: explain decides with the frozen ruleset", e)
            with open(os.path.join(sb.project, "agentstack.toml"), "a") as f:
                f.write("\n# edited after the freeze\n")
            lst = payload(g.call("agentstack_list", {}))
            check(lst["servers"] == ["opsbox", "web"] and "note" in lst and
                  lst["trust"] == "changed since the run's grant froze it",
                  "grant, project changed: names only", lst)
            call_all(g, sb, "grant")
            g.close()


def stale_endpoints():
    with Sandbox() as sb:
        sb.write("agentstack.toml", "version = 1\n")
        gwd = os.path.join(sb.ah, "gateway")
        p = subprocess.Popen(["true"])
        p.wait()
        dead = str(p.pid)
        p2 = subprocess.Popen(["true"])
        p2.wait()
        dead2 = str(p2.pid)
        live = str(os.getpid())
        for d in (dead, live, "notapid"):
            sb.write("endpoint.json", '{"token":"x"}', base=os.path.join(gwd, d))
        p3 = subprocess.Popen(["true"])
        p3.wait()
        foreign = str(p3.pid)
        sb.write("endpoint.json", "{}", base=os.path.join(gwd, foreign))
        if os.geteuid() == 0:
            os.chown(os.path.join(gwd, foreign), 65534, 65534)
        # A live pid that started after its endpoint was written: a reused pid.
        reused = str(os.getppid())
        sb.write("endpoint.json", "{}", base=os.path.join(gwd, reused))
        old = 978307200  # 2001-01-01, before any process of this boot started
        os.utime(os.path.join(gwd, reused, "endpoint.json"), (old, old))
        os.utime(os.path.join(gwd, reused), (old, old))
        outside = os.path.join(sb.root, "outside")
        sb.write("keep.txt", "precious", base=outside)
        os.symlink(outside, os.path.join(gwd, dead2))
        with Gateway(sb) as g:
            g.initialize()
            g.tools()
            g.close()
        check(not os.path.exists(os.path.join(gwd, dead)), "a dead gateway's dir is removed")
        check(os.path.exists(os.path.join(gwd, live, "endpoint.json")),
              "a live pid's dir is kept")
        check(not os.path.exists(os.path.join(gwd, reused)),
              "a live pid that started after its endpoint.json was written (reused) goes")
        check(os.path.exists(os.path.join(gwd, "notapid", "endpoint.json")),
              "a non-pid name is kept")
        check(os.path.islink(os.path.join(gwd, dead2)) and
              os.path.exists(os.path.join(outside, "keep.txt")),
              "a symlinked pid dir is not followed")
        if os.geteuid() == 0:
            check(os.path.exists(os.path.join(gwd, foreign, "endpoint.json")),
                  "a dead pid's dir owned by someone else is kept")
        else:
            check(not os.path.exists(os.path.join(gwd, foreign)),
                  "(not root: no foreign-owned dir to keep) an own dead pid dir goes")
            skip_part("not root: cannot make a dir owned by someone else, so 'a dead pid's dir "
                      "owned by someone else is kept' did not run")
    with Sandbox() as sb:
        # $AGENTSTACK_HOME/gateway itself a symlink: never swept through.
        sb.write("agentstack.toml", "version = 1\n")
        p = subprocess.Popen(["true"])
        p.wait()
        elsewhere = os.path.join(sb.root, "elsewhere")
        sb.write("endpoint.json", "{}", base=os.path.join(elsewhere, str(p.pid)))
        os.makedirs(sb.ah, exist_ok=True)
        os.symlink(elsewhere, os.path.join(sb.ah, "gateway"))
        with Gateway(sb) as g:
            g.initialize()
            g.tools()
            g.close()
        check(os.path.exists(os.path.join(elsewhere, str(p.pid), "endpoint.json")),
              "a symlinked gateway/ dir is not swept through")


def ambiguous_url():
    """A URL whose userinfo cannot be told from its host (two '@'): the
    listing shows its scheme only, never a part of the userinfo."""
    with Sandbox() as sb:
        sb.write("agentstack.toml", 'version = 1\n\n[servers.web]\ntype = "http"\n'
                 f'url = "https://bob:{URL_PW}@{URL_KEY}@api.example.com/mcp"\n')
        grant(sb)
        with Gateway(sb, "--auto-project") as g:
            g.initialize()
            lst = payload(g.call("agentstack_list", {}))
            web = next(s for s in lst["servers"] if s["name"] == "web")
            check(web["url"] == "https://…", "ambiguous URL: scheme only", web)
            raw = text(g.call("agentstack_list", {}))
            check(URL_PW not in raw and URL_KEY not in raw,
                  "ambiguous URL: no part of the userinfo shown", raw)
            g.close()


trusted()
untrusted()
ambiguous_url()
grant_mode()
stale_endpoints()
done()
