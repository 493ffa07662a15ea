/*
 * confine — the in-process layers a sandbox's init applies to itself before
 * it starts the harness: capabilities (all sets, bounding included),
 * securebits, no-new-privs, Landlock and a seccomp deny-list
 * (docs/sandbox.md).
 *
 * Why: namespaces and mounts are the boundary; these layers make the
 * boundary hold when a harness tries to rebuild it from the inside (new
 * namespaces, mounts, ptrace, TIOCSTI, AF_UNIX sockets to host daemons).
 *
 * Guarantees:
 *  - sbx_drop_privileges leaves no capability in any set (effective,
 *    permitted, inheritable, ambient, bounding) and locks SECBIT_NOROOT,
 *    SECBIT_NO_SETUID_FIXUP and SECBIT_KEEP_CAPS off, so no later exec can
 *    regain one; it fails rather than half-apply.
 *  - The seccomp filter checks the architecture first (a foreign-arch or x32
 *    syscall is refused), answers clone3 with ENOSYS so callers fall back to
 *    clone, whose namespace flags are then visible and refused; AF_UNIX
 *    socket() is refused while socketpair() stays allowed.
 *  - Landlock is applied only where the kernel has it; its absence is
 *    reported, never fatal (it is defence in depth, not the boundary).
 * These functions run in a forked child without other threads; they do not
 * allocate on the heap.
 */
#ifndef AS_SANDBOX_CONFINE_H
#define AS_SANDBOX_CONFINE_H

#include <stddef.h>

/* Sets PR_SET_NO_NEW_PRIVS. 0 or -1 (errno). */
int sbx_no_new_privs(void);

/* Landlock: read and execute everywhere, write only beneath `writable`
 * (NULL-terminated inside paths); abstract Unix sockets and signals scoped
 * to the sandbox where the ABI has scoping. Returns the ABI applied (>0),
 * 0 when the kernel has no Landlock, -1 on a failure (why in buf). */
int sbx_landlock_apply(const char *const *writable, char *why, size_t whysz);
/* This kernel's Landlock ABI version (what sbx_landlock_apply applies), or 0. */
int sbx_landlock_abi(void);

/* Clears every capability and locks the securebits. 0 or -1 (why in buf). */
int sbx_drop_privileges(char *why, size_t whysz);

/* Installs the deny-list filter (needs no-new-privs). 0 or -1 (why). */
int sbx_seccomp_install(char *why, size_t whysz);

#endif
