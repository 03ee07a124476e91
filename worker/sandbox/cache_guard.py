"""Keeping the page cache of shared files from carrying anything between sandboxes.

Every sandbox reads the same image files (and a replayed episode's sandbox the same bundle), and the kernel's page
cache of a file is shared by everyone who reads it. A policy could spell bits into which pages of a big image file
are cached (evicting some with ``posix_fadvise(DONTNEED)``, reading others) and a policy in a later sandbox, of a
later submission, read them back by timing its reads: reviewed main after issue 15 let a private episode's tasks
reach the author this way, through the next submission's output.

Two measures close it together:

* ``forbid_cache_control()``, in every episode process before the policy is imported: a seccomp filter that refuses
  the calls that drop or query cached pages (``fadvise64``, ``madvise`` with ``MADV_COLD``/``MADV_PAGEOUT``,
  ``process_madvise``, ``cachestat``) with ``EPERM``, and ``io_uring_setup`` (a ring's fadvise and madvise
  operations pass no syscall filter; Docker's default profile allows io_uring). It also refuses ``prlimit64`` on any
  process but the caller: the kernel lets a process of the same user lower another's limits, and the harness with a
  file limit of 3 crashed (the red team's round 2), which the worker took for a sandbox killed from outside.
  Filters are inherited by every child and cannot be removed.
* ``WARM_IMAGE_SCRIPT``, run once per worker process in a throwaway container of the image
  (``docker_backend``): it reads every file of the image, so that all its pages are cached, charged to that
  container's memory cgroup (not a sandbox's, whose memory pressure could reclaim them). With every page already
  cached and no way to drop one, reading a page changes nothing another sandbox can observe.

The bundle a sandbox reads is a copy the worker has just written (so its pages are cached too), a fresh copy for a
replacement sandbox (``runner.SandboxSession._fresh_bundle``).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from dataclasses import dataclass

# Python that reads every regular file of the root filesystem (not /proc, /sys, /dev: other filesystems) once.
WARM_IMAGE_SCRIPT = """
import os
total = 0
for folder, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(folder, d))]
    for name in files:
        path = os.path.join(folder, name)
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb", buffering=0) as f:
                    while chunk := f.read(1 << 20):
                        total += len(chunk)
        except OSError:
            pass
print(total)
"""

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
# seccomp_data: int nr at 0, u32 arch at 4, u64 instruction pointer at 8, u64 args[6] at 16 (low half first).
_NR, _ARCH, _ARG0_LOW, _ARG0_HIGH, _ARG2_LOW = 0, 4, 16, 20, 16 + 2 * 8
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_X32_SYSCALL_BIT = 0x40000000
_MADV_COLD, _MADV_PAGEOUT = 20, 21


@dataclass(frozen=True)
class _Numbers:
    """An architecture's audit value and the numbers of the calls the filter looks at."""

    arch: int
    fadvise64: int
    madvise: int
    process_madvise: int
    cachestat: int
    io_uring: tuple[int, int, int]  # setup, enter, register
    prlimit64: int


_SYSCALLS = {
    "x86_64": _Numbers(0xC000003E, 221, 28, 440, 451, (425, 426, 427), 302),
    "aarch64": _Numbers(0xC00000B7, 223, 233, 440, 451, (425, 426, 427), 261),
}


def _program(n: _Numbers) -> bytes:
    """The filter: refuse those calls (and anything not of this architecture's native ABI), allow the rest."""
    deny, allow = _SECCOMP_RET_ERRNO | errno.EPERM, _SECCOMP_RET_ALLOW
    # (code, k, jump-if-true target, jump-if-false target); targets are labels, resolved to offsets below.
    program: list[tuple[int, int, str, str]] = [
        (_BPF_LD_W_ABS, _ARCH, "", ""),
        (_BPF_JEQ_K, n.arch, "nr", "deny"),  # 32-bit compat calls have another audit arch
        (_BPF_LD_W_ABS, _NR, "", ""),  # nr:
        (_BPF_JGE_K, _X32_SYSCALL_BIT, "deny", "next"),  # x32 calls carry this bit
        (_BPF_JEQ_K, n.fadvise64, "deny", "next"),
        (_BPF_JEQ_K, n.process_madvise, "deny", "next"),
        (_BPF_JEQ_K, n.cachestat, "deny", "next"),
        # io_uring runs fadvise and madvise as ring operations that no syscall filter sees: no ring at all.
        (_BPF_JEQ_K, n.io_uring[0], "deny", "next"),
        (_BPF_JEQ_K, n.io_uring[1], "deny", "next"),
        (_BPF_JEQ_K, n.io_uring[2], "deny", "next"),
        (_BPF_JEQ_K, n.prlimit64, "prlimit", "next"),
        (_BPF_JEQ_K, n.madvise, "next", "allow"),
        (_BPF_LD_W_ABS, _ARG2_LOW, "", ""),  # madvise's advice
        (_BPF_JEQ_K, _MADV_COLD, "deny", "next"),
        (_BPF_JEQ_K, _MADV_PAGEOUT, "deny", "allow"),
        (_BPF_LD_W_ABS, _ARG0_LOW, "", ""),  # prlimit: its pid, of which only 0 (the caller itself) is allowed
        (_BPF_JEQ_K, 0, "next", "deny"),
        (_BPF_LD_W_ABS, _ARG0_HIGH, "", ""),
        (_BPF_JEQ_K, 0, "allow", "deny"),
        (_BPF_RET_K, deny, "", ""),  # deny:
        (_BPF_RET_K, allow, "", ""),  # allow:
    ]
    labels = {"nr": 2, "prlimit": len(program) - 6, "deny": len(program) - 2, "allow": len(program) - 1}

    def offset(label: str, at: int) -> int:
        return 0 if label in ("", "next") else labels[label] - at - 1

    return b"".join(
        struct.pack("HBBI", code, offset(jt, i), offset(jf, i), k) for i, (code, k, jt, jf) in enumerate(program)
    )


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def forbid_cache_control() -> bool:
    """Install the filter in this process (and so in everything it starts); False where it cannot be (another
    architecture, no seccomp): the caller decides whether that is acceptable."""
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return False
    program = _program(numbers)
    buffer = ctypes.create_string_buffer(program)
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0)
