"""Start-up cost guard: libcurl is loaded by the HTTP upstream client on
first use (src/mcp/curl_dl.c) and libsecret by the keychain on its first
call (src/secrets/secret_dl.c), never by the dynamic loader at start, so
every command starts without mapping curl's ~35 libraries or libsecret's
gio/gobject/glib chain (and without running glib's constructors).
Structural checks only (no timing): the loader's own list of what it maps
at start."""
import os
import subprocess

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

r = subprocess.run([BIN, "--version"], capture_output=True, text=True, timeout=60)
check(r.returncode == 0 and r.stdout.startswith("agentstack "), "--version still works",
      r.stdout + r.stderr)
done()
