"""Start-up cost guard: libcurl is loaded by the HTTP upstream client on
first use (src/mcp/curl_dl.c), libsecret by the keychain on its first
call (src/secrets/secret_dl.c), libcrypto by the first digest
(src/base/crypto_dl.c) and libidn2 by the first Unicode host label
(src/policy/pol_host.c), never by the dynamic loader at start, so every command
starts without mapping curl's ~35 libraries or libsecret's gio/gobject/glib
chain (and without running glib's constructors), and without resolving
libcrypto's and libidn2's ~4,800 BIND_NOW relocations.
Structural checks only (no timing): the loader's own list of what it maps
at start."""
import os
import subprocess
import tempfile

from aslib import BIN, check, done


def loaded_at_start():
    # What ldd prints, from the loader itself (binutils not needed).
    env = dict(os.environ, LD_TRACE_LOADED_OBJECTS="1")
    r = subprocess.run([BIN], env=env, capture_output=True, text=True, timeout=60)
    return r.returncode, [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


rc, libs = loaded_at_start()
check(rc == 0 and any(name.startswith("libc.so") for name in libs),
      "the loader lists what it maps at start", libs)
curlish = [n for n in libs if n.startswith("libcurl")]
check(not curlish, "libcurl is not mapped at start (dlopened by HTTP upstreams)", curlish)
# curl's own dependencies must not come back through another library either
heavy = [n for n in libs if n.split(".so")[0] in
         ("libgnutls", "libldap-2.5", "libgssapi_krb5", "libkrb5", "librtmp", "libssh2",
          "libnghttp2", "libpsl", "libbrotlidec")]
check(not heavy, "none of libcurl's TLS/Kerberos/LDAP dependencies is mapped at start", heavy)

# libsecret and the glib stack it runs on: only the keychain needs them
glibish = [n for n in libs if n.split(".so")[0] in
           ("libsecret-1", "libglib-2.0", "libgio-2.0", "libgobject-2.0", "libgmodule-2.0")]
check(not glibish, "libsecret, libglib, libgio, libgobject are not mapped at start "
      "(dlopened by the keychain)", glibish)
# nor libsecret's other dependencies, through another library
secret_deps = [n for n in libs if n.split(".so")[0] in
               ("libgcrypt", "libmount", "libselinux", "libpcre2-8", "libffi", "libblkid")]
check(not secret_deps, "none of libsecret's own dependencies is mapped at start", secret_deps)

# libcrypto and libidn2 (with libunistring): Debian links them BIND_NOW, so
# merely mapping them costs ~0.7 ms of relocations before main()
lazy = [n for n in libs if n.split(".so")[0] in ("libcrypto", "libssl", "libidn2",
                                                   "libunistring")]
check(not lazy, "libcrypto, libidn2 and libunistring are not mapped at start (dlopened on "
      "first use)", lazy)

# ... and the first digest does load the system's libcrypto: `lock` hashes
with tempfile.TemporaryDirectory(prefix="as-startup-") as tmp:
    home = os.path.join(tmp, "home")
    proj = os.path.join(tmp, "proj")
    os.makedirs(os.path.join(home, ".agentstack"))
    os.makedirs(os.path.join(proj, ".agentstack"))
    with open(os.path.join(proj, ".agentstack", "agentstack.toml"), "w") as f:
        f.write("version = 1\n")
    env = dict(os.environ, HOME=home, AGENTSTACK_HOME=os.path.join(home, ".agentstack"),
               LD_DEBUG="files")
    r = subprocess.run([BIN, "lock", "--write"], cwd=proj, env=env, capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0 and "file=libcrypto.so" in r.stderr,
          "a command that hashes (lock --write) loads libcrypto on first use",
          r.stdout + r.stderr[-2000:])

r = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=60)
check(r.returncode == 0 and r.stdout.startswith("agentstack "), "--version still works",
      r.stdout + r.stderr)
done()
