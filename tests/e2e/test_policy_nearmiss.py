"""`!delete_*` and the spellings it does not cover, written as the attack: a
server names its tool `delete-all` or `delete.all` and walks past a deny
written with '_'. Globs stay literal (docs/policy.md "Globs"), so the tool is
allowed — and `policy test` says so on stderr, naming the deny that would
have matched once '-' and '.' are read as '_'. A tool the deny matches as
written, or one no deny comes near, gets no warning."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from aslib import Sandbox, check, done  # noqa: E402


def main():
    with Sandbox() as sb:
        os.makedirs(sb.ah, exist_ok=True)
        sb.write("agentstack.toml", 'version = 1\n\n[policy.tools]\n"*" = ["!delete_*"]\n',
                 base=sb.ah)
        sb.write("agentstack.toml", 'version = 1\n\n[policy.tools]\nops = ["!drop.table*"]\n')
        for tool in ("delete-all", "delete.all", "DELETE-ALL"):
            r = sb.run("policy", "test", "tool", "ops", tool)
            check(r.returncode == 0 and r.stdout.startswith("ALLOW"),
                  f"{tool}: globs are literal, so it is allowed", r.stdout)
            check(f"warning: {tool} is allowed, but the machine deny \"!delete_*\" would match it"
                  in r.stderr and "'-' and '.'" in r.stderr,
                  f"{tool}: policy test warns about the near miss", r.stderr)
        r = sb.run("policy", "test", "tool", "ops", "drop_table_users")
        check(r.returncode == 0 and "project deny \"!drop.table*\"" in r.stderr,
              "a project deny written with '.' warns about '_' spellings too", r.stderr)
        r = sb.run("policy", "test", "tool", "ops", "delete_all")
        check(r.returncode == 1 and "DENY" in r.stdout and "warning" not in r.stderr,
              "a tool the deny matches as written: denied, no warning", r.stdout + r.stderr)
        r = sb.run("policy", "test", "tool", "ops", "list-items")
        check(r.returncode == 0 and r.stderr == "", "no deny comes near: no warning", r.stderr)
    done()


if __name__ == "__main__":
    main()
