"""Reports what it is allowed to do, as one JSON line at the first decision: its capabilities, no_new_privs and
seccomp mode from /proc/self/status, its ids, whether / is read-only, whether it can create namespaces, mount or
chroot, and every Unix socket on the filesystem (the Docker engine's above all). Plays on normally (``ok``)."""

import ctypes
import json
import os
import stat
import time

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000


def status_fields():
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    keep = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters")
    return {k: fields.get(k) for k in keep}


def libc_call(name, *args):
    libc = ctypes.CDLL(None, use_errno=True)
    result = getattr(libc, name)(*args)
    return "allowed" if result == 0 else f"refused: {os.strerror(ctypes.get_errno())}"


def root_read_only():
    try:
        with open("/redteam-probe", "w"):
            pass
    except OSError as exc:
        return {"statvfs_rdonly": bool(os.statvfs("/").f_flag & os.ST_RDONLY), "write": os.strerror(exc.errno)}
    return {"statvfs_rdonly": bool(os.statvfs("/").f_flag & os.ST_RDONLY), "write": "allowed"}


def unix_sockets(budget_s=5.0):
    found, stop = [], time.monotonic() + budget_s
    for root, dirs, names in os.walk("/", onerror=lambda exc: None):
        if root.startswith(("/proc", "/sys")) or time.monotonic() > stop:
            dirs[:] = []
            continue
        for name in names:
            path = os.path.join(root, name)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    found.append(path)
            except OSError:
                pass
    return sorted(found)


def policy(env, task, rng):
    if env.k == 0:
        report = {
            **status_fields(),
            "uid": os.getuid(),
            "euid": os.geteuid(),
            "gid": os.getgid(),
            "groups": os.getgroups(),
            "root": root_read_only(),
            "unshare_user": libc_call("unshare", CLONE_NEWUSER),
            "unshare_mount": libc_call("unshare", CLONE_NEWNS),
            "mount_tmpfs": libc_call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
            "chroot": libc_call("chroot", b"/tmp"),
            "docker_sock": [p for p in ("/var/run/docker.sock", "/run/docker.sock") if os.path.exists(p)],
            "unix_sockets": unix_sockets(),
        }
        print(json.dumps(report))
    return int(env.mask(task).argmax())
