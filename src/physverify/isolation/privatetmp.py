"""Each claim's own /tmp, /dev/shm and HOME inside the sandbox, which no other claim of the run can reach.

Inside the sandbox every claim runs as the same user in one mount namespace, so /tmp was one
folder for the whole run: a claim could plant a file another claim reads at a fixed path (a
numba or matplotlib cache, a hand-written /tmp/x.npy), or read what another wrote there.

``enter`` runs in the claim's own process before anything of the claim's is loaded
(child.run_as_process), and, when physverify inside the sandbox asked for it (``CLAIM_NS_ENV``):

1. makes a user namespace, a mount namespace and an IPC namespace (System V shared memory,
   semaphores and message queues) of the claim's own (the same uid and gid mapped), its mounts
   private, so nothing it mounts is seen by any other process;
2. remounts read-only every mount it received writable (the sandbox's shared /tmp, /dev/shm,
   /home, /root, the bound ledger and output files), then mounts an empty tmpfs on /tmp and
   /dev/shm, and makes its HOME and TMPDIR again, empty, inside its new /tmp;
3. (Landlock ABI 6 and later, Linux 6.12) puts itself in a Landlock domain of its own, scoped:
   its signals and its connections to abstract Unix sockets then reach no process outside it
   (physverify, the fork server, the other claims), so it can no longer stop or kill them;
4. gives up every capability it holds in its user namespace (so it cannot unmount its /tmp,
   nor make a read-only mount writable again), and installs a seccomp filter refusing any new
   user namespace (``unshare``/``clone`` with CLONE_NEWUSER; ``clone3``, whose flags a filter
   cannot read, answers ENOSYS, and the C library falls back to ``clone``): what bwrap's
   ``--disable-userns`` did for the whole sandbox, which would also have refused step 1.

Why no other claim reaches it: the kernel lets one process open another's /proc/PID/root,
cwd, fd, environ or mem (or ptrace it, or join its namespaces) only if both are in the same
user namespace, or the opener holds CAP_SYS_PTRACE (CAP_SYS_ADMIN for setns) over the
target's user namespace (commoncap's ptrace check, on top of the same-uid and dumpable
checks). Every claim is in a user namespace of its own, a sibling of the others, so none
holds anything over another's; a program a claim starts with exec stays in its namespace.
The processes with rights over it are those of its uid in the sandbox's own user namespace,
where its namespace was made: physverify, the fork server, the supervisors and bwrap's init,
none of which runs code of the repository (every interpreter physverify starts takes -P from
Python 3.11 on, so a module in a claims folder is not imported before the claim's namespace is
made; on 3.10 a claims folder's ``socket.py`` would still run there). Were the claims in the
sandbox's own user namespace, any dumpable one would open another's /proc/PID/root, and the
kernel makes every exec'd program dumpable again.

physverify inside the sandbox calls ``probe`` once, at its start, before any claim runs: it
tries steps 1-4 in a forked child. Where that fails (docker's and podman's default seccomp
profile refuse new user namespaces; a kernel without unprivileged user namespaces; an
architecture other than x86_64 and aarch64), it prints one line and the claims share /tmp as
before (sandbox/README.md).
"""

from __future__ import annotations

import errno
import os
import struct
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

from physverify.errors import PhysverifyError


# Set by the sandbox's plan ("ask"); physverify inside turns it into "private" or removes it (``probe``).
CLAIM_NS_ENV = "PHYSVERIFY_CLAIM_NAMESPACE"
ASK, PRIVATE = "ask", "private"

_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
# statvfs's flag bits for the same mount flags (ST_RDONLY 1, ..., ST_RELATIME 4096)
_ST_TO_MS = {1: _MS_RDONLY, 2: _MS_NOSUID, 4: _MS_NODEV, 8: _MS_NOEXEC, 1024: _MS_NOATIME,
             2048: _MS_NODIRATIME, 4096: _MS_RELATIME}
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT = 38, 22, 24, 47
_PR_CAP_AMBIENT_CLEAR_ALL, _SECCOMP_MODE_FILTER = 4, 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
# Landlock (include/uapi/linux/landlock.h): creating a character or block device is the only
# file-system access handled, and none is granted; what is wanted is the domain itself.
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_RESTRICT_SELF = 444, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_ACCESS_FS_MAKE_CHAR, _LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 6, 1 << 11
_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, _LANDLOCK_SCOPE_SIGNAL = 1, 2
# seccomp: the architectures whose system call numbers are known here, by os.uname().machine
_ARCHES = {  # AUDIT_ARCH_*, unshare, clone, clone3
    "x86_64": (0xC000003E, 272, 56, 435),
    "aarch64": (0xC00000B7, 97, 220, 435),
}
_X32_SYSCALL_BIT = 0x40000000
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000


class PrivateTmpError(PhysverifyError):
    """The claim's own namespace could not be made: the claim does not run."""


def probe(env: MutableMapping[str, str] | None = None) -> str | None:
    """At physverify's start inside the sandbox: whether claims can get a private /tmp here; one line when not.

    When the sandbox asked (``CLAIM_NS_ENV`` is ``ask``), a forked child tries the whole of
    ``enter``; on success the variable becomes ``private``, which every claim's process
    inherits, else it is removed and the returned line says why. Called while this process
    has one thread (a user namespace cannot be entered by a process with more).
    """
    env = os.environ if env is None else env
    if env.get(CLAIM_NS_ENV) != ASK:
        return None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked child, which ends with os._exit
        code = 0
        try:
            os.close(read_end)
            _isolate(home=None, tmpdir=None)
        except BaseException as exc:  # noqa: BLE001 - the reason goes to the parent, which decides
            os.write(write_end, str(exc).encode("utf-8", "replace")[:500])
            code = 1
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reason_pipe:
        reason = reason_pipe.read().decode("utf-8", "replace")
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        env[CLAIM_NS_ENV] = PRIVATE
        return None
    env.pop(CLAIM_NS_ENV, None)
    return (f"physverify: the claims of this run share one /tmp and /dev/shm: no claim can have its own here "
            f"({reason or 'the probe ended with ' + str(status)}); sandbox/README.md, \"Each claim's own /tmp\"")


def enter(env: Mapping[str, str] | None = None) -> bool:
    """In the claim's own process, before any code of the claim runs: its own namespace, when ``probe`` said so.

    Returns whether it entered one. A failure here, after the probe succeeded, raises
    PrivateTmpError: the claim must not run in the shared /tmp the run promised it would not.
    """
    env = os.environ if env is None else env
    if env.get(CLAIM_NS_ENV) != PRIVATE:
        return False
    try:
        _isolate(home=env.get("HOME"), tmpdir=env.get("TMPDIR"))
    except OSError as exc:
        raise PrivateTmpError(f"the claim's own /tmp could not be made ({exc}); the claim was not run") from exc
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:  # a forked process may have found the shared one already
        tempfile.tempdir = None  # type: ignore[attr-defined]
    return True


def _isolate(home: str | None, tmpdir: str | None) -> None:
    """Steps 1-4 of the module's docstring, in this (single-threaded) process."""
    import ctypes  # here: a claim's process outside the sandbox never loads it for this

    libc = ctypes.CDLL(None, use_errno=True)
    machine = os.uname().machine
    arch = _ARCHES.get(machine)
    if arch is None:
        raise OSError(errno.ENOSYS, f"no seccomp filter is written for the {machine} architecture")
    _call(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    uid, gid = os.getuid(), os.getgid()
    sizes = {path: _size(path) for path in ("/tmp", "/dev/shm")}
    _call(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWIPC), "unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as file:
            file.write(text)
    _call(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount(/, private)")
    mounts = _mounts()
    for mount_point, writable in mounts:
        if writable:
            _remount_read_only(libc, mount_point)
    for path, size in sizes.items():
        if size is not None:
            # What the sandbox bound read-only below /tmp (a Python, a virtualenv or physverify itself
            # installed there) must stay where it was: the new tmpfs would hide it, and an import the
            # claim makes later would then fail. Each is held open and bound again on top.
            kept = [(point, os.open(point, os.O_PATH | os.O_CLOEXEC)) for point in _read_only_below(mounts, path)]
            try:
                options = f"mode=1777,size={size}".encode()
                _call(libc.mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options),
                      f"tmpfs on {path}")
                for point, held in kept:
                    _bind_again(libc, point, held)
            finally:
                for _, held in kept:
                    os.close(held)
    for name, folder, fallback in (("HOME", home, "/tmp/home"), ("TMPDIR", tmpdir, "/tmp")):
        if folder is not None and not _under_tmp(folder):  # read-only now: one of its own in the new /tmp
            os.environ[name] = folder = fallback
        if folder is not None:
            os.makedirs(folder, mode=0o700, exist_ok=True)
    _restrict_self(libc)
    _drop_capabilities(libc)
    _no_user_namespaces(libc, *arch)


def _call(result: int, what: str) -> None:
    import ctypes

    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _size(path: str) -> int | None:
    """The size of the tmpfs at ``path`` (the sandbox gave it the memory limit), or None when there is none."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_blocks * stats.f_frsize or None


def _mounts() -> list[tuple[str, bool]]:
    """The mount points of this namespace, each with whether it is writable, except /proc and what lies under it."""
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            point = _unescape(fields[4])
            if point != "/proc" and not point.startswith("/proc/"):
                points.append((point, "rw" in fields[5].split(",")))
    return points


def _read_only_below(mounts: list[tuple[str, bool]], path: str) -> list[str]:
    """The outermost mount points strictly below ``path`` that were read-only (the sandbox's read-only binds).

    Writable ones (the ledger and result files bound for physverify) are left hidden: the claim has no use for them.
    """
    below = [point for point, writable in mounts
             if not writable and point != path and os.path.commonpath([point, path]) == path]
    return [point for point in below if not any(other != point and os.path.commonpath([point, other]) == other
                                                for other in below)]


def _bind_again(libc: Any, point: str, held: int) -> None:
    """Bind the mount ``held`` open (hidden by a tmpfs since) at ``point`` again, read-only as it was."""
    if os.path.isdir(f"/proc/self/fd/{held}"):
        os.makedirs(point, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(point), exist_ok=True)
        os.close(os.open(point, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
    _call(libc.mount(f"/proc/self/fd/{held}".encode(), point.encode(), None, _MS_BIND | _MS_REC, None),
          f"bind {point} again")
    _remount_read_only(libc, point)


def _remount_read_only(libc: Any, point: str) -> None:
    """Make the mount at ``point`` read-only for this namespace, keeping the flags the kernel locked on it."""
    flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _kept_flags(point)
    _call(libc.mount(None, point.encode(), None, flags, None), f"remount {point} read-only")


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash come as octal escapes (\\040)."""
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def _kept_flags(mount_point: str) -> int:
    """The flags a remount must keep: the kernel locks them on mounts received from a more privileged namespace."""
    kept = os.statvfs(mount_point).f_flag
    return sum(ms for st, ms in _ST_TO_MS.items() if kept & st and ms != _MS_RDONLY)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 without Landlock. From 6 on, a claim's signals stay in its domain."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = int(libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION)))
    return max(abi, 0)


def _under_tmp(folder: str) -> bool:
    return os.path.isabs(folder) and os.path.commonpath([os.path.normpath(folder), "/tmp"]) == "/tmp"


def _restrict_self(libc: Any) -> None:
    """Scope this process's signals and abstract sockets to a new Landlock domain (inherited by its children).

    Nothing where Landlock is older than ABI 6 or absent: the namespaces above already keep
    the other claims out of this one's files; only signals between claims stay possible.
    """
    import ctypes

    if landlock_abi() < 6:
        return
    handled_fs = _LANDLOCK_ACCESS_FS_MAKE_CHAR | _LANDLOCK_ACCESS_FS_MAKE_BLOCK  # none granted: no device nodes
    attr = struct.pack("QQQ", handled_fs, 0, _LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | _LANDLOCK_SCOPE_SIGNAL)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = int(libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, buffer, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)))
    if ruleset < 0:
        _call(-1, "landlock_create_ruleset")
    try:
        _call(int(libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0))), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _drop_capabilities(libc: Any) -> None:
    """Give up every capability, now (capset) and for every program started later (bounding and ambient sets)."""
    import ctypes

    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as last:
        last_cap = int(last.read())
    for cap in range(last_cap + 1):
        _call(libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"prctl(PR_CAPBSET_DROP, {cap})")
    _call(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    header = ctypes.create_string_buffer(struct.pack("Ii", _LINUX_CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)  # two cap_user_data_t, all zero
    _call(libc.capset(header, data), "capset")


def _no_user_namespaces(libc: Any, audit_arch: int, unshare: int, clone: int, clone3: int) -> None:
    """A seccomp filter: no new user namespace from this process or anything it starts.

    Other architectures' calls (a 32-bit program, x32) are refused altogether: their numbers differ.
    """
    import ctypes

    eperm, enosys = _SECCOMP_RET_ERRNO | errno.EPERM, _SECCOMP_RET_ERRNO | errno.ENOSYS
    ld_w_abs, jeq_k, jset_k, jge_k, ret_k = 0x20, 0x15, 0x45, 0x35, 0x06
    program = [
        (ld_w_abs, 0, 0, 4),  # seccomp_data.arch
        (jeq_k, 1, 0, audit_arch),
        (ret_k, 0, 0, eperm),
        (ld_w_abs, 0, 0, 0),  # seccomp_data.nr
        (jge_k, 0, 1, _X32_SYSCALL_BIT),
        (ret_k, 0, 0, eperm),
        (jeq_k, 0, 1, clone3),
        (ret_k, 0, 0, enosys),
        (jeq_k, 1, 0, unshare),
        (jeq_k, 0, 3, clone),
        (ld_w_abs, 0, 0, 16),  # the low word of seccomp_data.args[0]: the flags of both
        (jset_k, 0, 1, _CLONE_NEWUSER),
        (ret_k, 0, 0, eperm),
        (ret_k, 0, 0, _SECCOMP_RET_ALLOW),
    ]
    filters = b"".join(struct.pack("HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(filters, len(filters))
    fprog = struct.pack("HxxxxxxP", len(program), ctypes.addressof(buffer))
    fprog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    _call(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog_buffer, 0, 0), "prctl(PR_SET_SECCOMP)")
