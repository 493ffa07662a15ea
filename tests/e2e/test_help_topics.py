"""agentstack help <topic>: the concepts trust, policy and lanes, `help
topics` listing them, did-you-mean for an unknown word, and the command
inventory unchanged by them (docs/commands.md, "help")."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import SRC, Sandbox, check, done  # noqa: E402

TOPICS = ("trust", "policy", "lanes")

with Sandbox() as sb:
    r = sb.run("help", "topics")
    listed = [l.split()[0] for l in r.stdout.splitlines()[1:] if l.strip()]
    check(r.returncode == 0 and listed == list(TOPICS) and not r.stderr,
          "help topics lists trust, policy, lanes", r.stdout + r.stderr)

    r = sb.run("help", "lanes")
    check(r.returncode == 0 and r.stdout.startswith("lanes — ") and "live" in r.stdout and
          "rendered" in r.stdout and "agentstack delivery" in r.stdout and not r.stderr,
          "help lanes: the concept (no command of that name)", r.stdout + r.stderr)
    for name in ("trust", "policy"):
        r = sb.run("help", name)
        check(r.returncode == 0 and r.stdout.startswith("usage: agentstack " + name) and
              ("\n%s — " % name) in r.stdout,
              "help %s: the command's usage, then the concept" % name, r.stdout[:400])
        r2 = sb.run(name, "--help")
        check(r2.returncode == 0 and "%s — " % name not in r2.stdout,
              "%s --help: the usage alone" % name, r2.stdout[:200])
    r = sb.run("help", "policy")
    check("machine" in r.stdout and "project" in r.stdout and "docs/policy.md" in r.stdout,
          "the policy text names both layers and its page", r.stdout)
    r = sb.run("help", "trust")
    check("Untrusted" in r.stdout and "Changed" in r.stdout and "docs/trust.md" in r.stdout,
          "the trust text names the states and its page", r.stdout)

    # the pages a topic points at exist
    for name in TOPICS:
        r = sb.run("help", name)
        for word in r.stdout.split():
            w = word.strip("(),.\"")
            if w.startswith("docs/") and w.endswith(".md"):
                check(os.path.exists(os.path.join(SRC, w)), "help %s: %s exists" % (name, w))
        check(all(len(l) <= 80 for l in r.stdout.splitlines()[-30:]),
              "help %s: lines fit 80 columns" % name)

    # unknown words: a usage error naming the closest command or topic
    for typo, want in (("lanez", "lanes"), ("trsut", "trust"), ("topcis", "topics"),
                       ("lcok", "lock")):
        r = sb.run("help", typo)
        check(r.returncode == 2 and ("unknown command or topic '%s'" % typo) in r.stderr and
              ("did you mean '%s'?" % want) in r.stderr and r.stdout == "",
              "help %s: exit 2, did you mean '%s'" % (typo, want), r.stderr)
    r = sb.run("help", "zzzzzz")
    check(r.returncode == 2 and "agentstack help topics" in r.stderr, "help zzzzzz: exit 2, "
          "points at help topics", r.stderr)
    r = sb.run("help", "lanes", "--json")
    check(r.returncode == 2, "--json goes with commands, not topics", r.stderr)

    # topics are not commands: the inventory does not list them
    inv = json.loads(sb.run("help", "--all", "--json").stdout)
    names = {c["name"] for c in inv["commands"]}
    check("lanes" not in names and "topics" not in names, "the inventory holds no topic",
          sorted(names))
    r = sb.run("help")
    check("agentstack help topics" in r.stdout, "help's overview points at the topics", r.stdout)

done()
