"""Tries every way to drop or query cached pages of files other sandboxes read too (its bundle, the image's
libraries): ``posix_fadvise(DONTNEED)``, ``madvise(MADV_PAGEOUT)`` and ``MADV_COLD`` on a mapping of one,
``cachestat``, and an io_uring (whose fadvise and madvise operations no syscall filter sees). Reported as one JSON
line.

The red team after issue 15 wrote a private episode's tasks into which pages of an image file were cached, and read
them back by timing reads in the next submission's sandbox, whose output the author reads.
"""

import ctypes
import errno
import json
import mmap
import os

libc = ctypes.CDLL(None, use_errno=True)


def _outcome(result):
    return "allowed" if result == 0 else f"refused: {errno.errorcode.get(ctypes.get_errno(), '?')}"


def _fadvise(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return "allowed"
    except OSError as exc:
        return f"refused: {errno.errorcode[exc.errno]}"
    finally:
        os.close(fd)


def _madvise(path, advice):
    with open(path, "rb") as handle:
        mapping = mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ)
        try:
            mapping.madvise(advice)
            return "allowed"
        except OSError as exc:
            return f"refused: {errno.errorcode[exc.errno]}"
        finally:
            mapping.close()


def _cachestat(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        cache_range = (ctypes.c_uint64 * 2)(0, 0)
        stat = (ctypes.c_uint64 * 5)()
        return _outcome(libc.syscall(451, fd, ctypes.byref(cache_range), ctypes.byref(stat), 0))
    finally:
        os.close(fd)


def _io_uring():
    params = (ctypes.c_char * 120)()
    fd = libc.syscall(425, 4, ctypes.byref(params))  # io_uring_setup
    if fd >= 0:
        os.close(fd)
        return "allowed"
    return f"refused: {errno.errorcode.get(ctypes.get_errno(), '?')}"


def policy(env, task, rng):
    if env.k == 0:
        mine = os.path.abspath(__file__)
        image = os.__file__
        report = {
            "fadvise_bundle": _fadvise(mine),
            "fadvise_image": _fadvise(image),
            "madvise_pageout": _madvise(image, 21),
            "madvise_cold": _madvise(image, 20),
            "cachestat": _cachestat(image),
            "io_uring": _io_uring(),
        }
        print(json.dumps(report), flush=True)
    return int(env.mask(task).argmax())
