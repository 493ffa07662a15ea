/* In-process confinement layers (see confine.h). */
#include "sandbox/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

int sbx_no_new_privs(void)
{
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* ---- Landlock ------------------------------------------------------------
 * Declared here rather than taken from <linux/landlock.h>: the build host's
 * headers may predate the ABI the running kernel offers. */

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
struct ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

#define LL_CREATE_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

static int ll_rule(int rs, const char *path, uint64_t access, char *why, size_t whysz)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0; /* nothing to grant */
        snprintf(why, whysz, "landlock: opening %s: %s", path, strerror(errno));
        return -1;
    }
    struct ll_path_beneath pb = {.allowed_access = access, .parent_fd = fd};
    long r = syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0);
    int e = errno;
    close(fd);
    if (r < 0) {
        snprintf(why, whysz, "landlock: rule for %s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int sbx_landlock_abi(void)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_VERSION);
    return abi < 1 ? 0 : (int)abi;
}

int sbx_landlock_apply(const char *const *writable, char *why, size_t whysz)
{
    long abi = sbx_landlock_abi();
    if (abi < 1)
        return 0;
    uint64_t read_x = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
    uint64_t write = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR |
                     LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO |
                     LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
    if (abi >= 2)
        write |= LL_FS_REFER;
    if (abi >= 3)
        write |= LL_FS_TRUNCATE;
    struct ll_ruleset_attr attr = {.handled_access_fs = read_x | write};
    size_t attr_size = 8;
    if (abi >= 6) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
        attr_size = sizeof attr;
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (rs < 0) {
        snprintf(why, whysz, "landlock: creating the ruleset: %s", strerror(errno));
        return -1;
    }
    int rc = ll_rule(rs, "/", read_x, why, whysz);
    /* Devices and /proc: writing to /dev/null, a tty or /proc/self/fd/N. */
    if (!rc)
        rc = ll_rule(rs, "/dev", read_x | LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0), why,
                     whysz);
    if (!rc)
        rc = ll_rule(rs, "/proc", read_x | LL_FS_WRITE_FILE, why, whysz);
    /* A writable regular file (a result file) gets the rights a file can
     * hold: a directory right on a file is refused by the kernel. */
    uint64_t file_rights =
        LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_WRITE_FILE | (abi >= 3 ? LL_FS_TRUNCATE : 0);
    for (const char *const *w = writable; !rc && w && *w; w++) {
        struct stat st;
        int is_file = stat(*w, &st) == 0 && S_ISREG(st.st_mode);
        rc = ll_rule(rs, *w, is_file ? file_rights : read_x | write, why, whysz);
    }
    if (!rc && syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
        snprintf(why, whysz, "landlock: restricting: %s", strerror(errno));
        rc = -1;
    }
    close(rs);
    return rc < 0 ? -1 : (int)abi;
}

/* ---- capabilities --------------------------------------------------------- */

int sbx_drop_privileges(char *why, size_t whysz)
{
    /* The highest capability the kernel knows; probing past it fails EINVAL.
     * Start from the one these headers know: one or two probes, not 60. */
    int last = CAP_LAST_CAP;
    while (last < 63 && prctl(PR_CAPBSET_READ, last + 1, 0, 0, 0) >= 0)
        last++;
    while (last > 0 && prctl(PR_CAPBSET_READ, last, 0, 0, 0) < 0)
        last--;
    for (int c = 0; c <= last; c++) {
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL) {
            snprintf(why, whysz, "dropping capability %d from the bounding set: %s", c,
                     strerror(errno));
            return -1;
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
        snprintf(why, whysz, "clearing ambient capabilities: %s", strerror(errno));
        return -1;
    }
    unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                         SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                         SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0) {
        snprintf(why, whysz, "locking securebits: %s", strerror(errno));
        return -1;
    }
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &hdr, data) < 0) {
        snprintf(why, whysz, "clearing capabilities: %s", strerror(errno));
        return -1;
    }
    /* Verify: a layer that silently did not apply is worse than a refusal. */
    memset(data, 0xff, sizeof data);
    if (syscall(SYS_capget, &hdr, data) < 0 || data[0].effective || data[0].permitted ||
        data[0].inheritable || data[1].effective || data[1].permitted || data[1].inheritable) {
        snprintf(why, whysz, "capabilities are still present after clearing them");
        return -1;
    }
    return 0;
}

/* ---- seccomp ---------------------------------------------------------------- */

#if defined(__x86_64__)
#define SBX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SBX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#define SBX_AUDIT_ARCH 0
#endif

#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))
#define NS_CLONE_FLAGS                                                                             \
    (CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |     \
     CLONE_NEWCGROUP)

/* Syscalls refused outright with EPERM. Numbers from 424 up are the same on
 * every architecture, so the newer mount and io_uring calls are listed by
 * number: the build host's headers may not name them. */
static const int denied[] = {
    SYS_mount,
    SYS_umount2,
    SYS_pivot_root,
    SYS_chroot,
    SYS_unshare,
    SYS_setns,
    SYS_keyctl,
    SYS_add_key,
    SYS_request_key,
    SYS_bpf,
    SYS_perf_event_open,
    SYS_ptrace,
    SYS_process_vm_readv,
    SYS_process_vm_writev,
    SYS_init_module,
    SYS_finit_module,
    SYS_delete_module,
    SYS_kexec_load,
    SYS_userfaultfd,
    SYS_acct,
    SYS_swapon,
    SYS_swapoff,
    SYS_reboot,
    SYS_syslog,
    SYS_quotactl,
    SYS_open_by_handle_at,
    SYS_name_to_handle_at,
#ifdef SYS_kexec_file_load
    SYS_kexec_file_load,
#endif
#ifdef SYS_iopl
    SYS_iopl,
    SYS_ioperm,
#endif
    425,
    426,
    427, /* io_uring_setup, _enter, _register */
    428,
    429,
    430,
    431,
    432,
    433, /* open_tree, move_mount, fsopen, fsconfig, fsmount, fspick */
    442, /* mount_setattr */
};

int sbx_seccomp_install(char *why, size_t whysz)
{
    if (!SBX_AUDIT_ARCH) {
        snprintf(why, whysz, "seccomp: this architecture has no filter yet");
        return -1;
    }
    struct sock_filter f[192];
    size_t n = 0;
    /* Every instruction goes through PUT: one past the array is a refusal,
     * never a write out of bounds. */
#define PUT(ins) (n < sizeof f / sizeof f[0] ? (void)(f[n++] = (ins)) : (void)(n = SIZE_MAX))
#define ST(code, k) PUT((struct sock_filter)BPF_STMT((code), (k)))
#define JEQ(k, t, fl) PUT((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (fl)))
    /* Architecture first: a syscall number means nothing under another ABI. */
    ST(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    JEQ(SBX_AUDIT_ARCH, 1, 0);
    ST(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    ST(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    /* x32 syscalls carry bit 30; refuse the whole ABI. */
    PUT((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
    ST(BPF_RET | BPF_K, RET_ERRNO(EPERM));
#endif
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        JEQ((unsigned)denied[i], 0, 1);
        ST(BPF_RET | BPF_K, RET_ERRNO(EPERM));
    }
    /* clone3 hides its flags in memory: ENOSYS makes libc fall back to clone. */
    JEQ(SYS_clone3, 0, 1);
    ST(BPF_RET | BPF_K, RET_ERRNO(ENOSYS));
    /* clone: namespace flags refused (x86_64 and arm64 both pass flags in arg0). */
    JEQ(SYS_clone, 0, 4);
    ST(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    PUT((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_CLONE_FLAGS, 0, 1));
    ST(BPF_RET | BPF_K, RET_ERRNO(EPERM));
    ST(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    /* ioctl: TIOCSTI pushes input into a terminal; TIOCLINUX reads consoles. */
    JEQ(SYS_ioctl, 0, 5);
    ST(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]));
    JEQ(TIOCSTI, 2, 0);
    JEQ(TIOCLINUX, 1, 0);
    ST(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    ST(BPF_RET | BPF_K, RET_ERRNO(EPERM));
    /* socket(): deny-by-default on the family. A confined run needs TCP/UDP
     * over IPv4 and IPv6 (the proxy, the gateway face, loopback) and a
     * read-only netlink route socket (getifaddrs, if_nameindex, glibc's
     * AI_ADDRCONFIG: Node's os.networkInterfaces() throws without one).
     * Everything else is refused: AF_UNIX (a path or abstract socket reaches
     * a host daemon; refused with EPERM), AF_VSOCK (the hypervisor, which
     * no network namespace confines), AF_PACKET, AF_ALG, AF_KEY, AF_XDP,
     * AF_BLUETOOTH, other netlink protocols (sock_diag lists the host's
     * sockets, audit, uevent, netfilter, xfrm). EAFNOSUPPORT is what a kernel
     * without the family says, so a probing program degrades as it would
     * there. The family is an int: the low word of args[0] is what the
     * kernel reads. */
    JEQ(SYS_socket, 0, 11);
    ST(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    JEQ(AF_INET, 8, 0);
    JEQ(AF_INET6, 7, 0);
    JEQ(AF_UNIX, 0, 1);
    ST(BPF_RET | BPF_K, RET_ERRNO(EPERM));
    JEQ(AF_NETLINK, 0, 3);
    ST(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2]));
    JEQ(NETLINK_ROUTE, 2, 0);
    ST(BPF_RET | BPF_K, RET_ERRNO(EPROTONOSUPPORT));
    ST(BPF_RET | BPF_K, RET_ERRNO(EAFNOSUPPORT));
    ST(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    /* socketpair(): AF_UNIX only (the one family with local pairs that a
     * confined run uses; AF_TIPC pairs are refused with the rest). */
    JEQ(SYS_socketpair, 0, 4);
    ST(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    JEQ(AF_UNIX, 1, 0);
    ST(BPF_RET | BPF_K, RET_ERRNO(EAFNOSUPPORT));
    ST(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    ST(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
#undef ST
#undef JEQ
#undef PUT
    if (n == SIZE_MAX) {
        snprintf(why, whysz, "seccomp: the filter outgrew its %zu instructions",
                 sizeof f / sizeof f[0]);
        return -1;
    }
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 &&
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
        snprintf(why, whysz, "seccomp: installing the filter: %s", strerror(errno));
        return -1;
    }
    return 0;
}
