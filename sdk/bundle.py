"""Bundling a policy for upload: one ``.py`` file, or a directory with ``policy.py`` at its top, as a tar.gz.

The limits are the server's defaults (50 MB upload, 50 MB unpacked, 100 files; paths of at most 1024 bytes, name
parts of at most 255) and are checked here first, so a student learns about a forgotten checkpoint folder before
uploading it. Links are refused (the server refuses them
too, and following them could ship files from outside the directory). Caches (``__pycache__``, ``*.pyc``, ``.git``,
``.ipynb_checkpoints``) are left out. The archive is deterministic (sorted names, zero times and owners), so the
same files always give the same SHA-256, the bundle hash every evaluation records.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from layersched.sdk.errors import BundleError
from layersched.sdk.progress import format_bytes

# The server's defaults (server/config.py: max_bundle_mb, max_files, max_unpacked_mb; MB = 10**6 bytes).
MAX_BYTES = 50_000_000  # the upload
MAX_UNPACKED_BYTES = 50_000_000  # all files of a directory bundle together
MAX_FILES = 100
# What the server's upload check (server/bundles.py) allows a member's path: Linux's NAME_MAX for each part, and
# room under PATH_MAX for the folders the worker and the sandbox put in front.
MAX_PATH_BYTES = 1024
MAX_PART_BYTES = 255
ENTRY_POINT = "policy.py"
SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".ipynb_checkpoints", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class Bundle:
    """What is uploaded: ``data`` under ``filename``; ``files`` lists the bundled paths (relative, ``/``-separated)."""

    filename: str
    data: bytes
    files: tuple[str, ...]
    unpacked_bytes: int
    source: Path

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def content_type(self) -> str:
        return "text/x-python" if self.filename.endswith(".py") else "application/gzip"

    @property
    def root(self) -> Path:
        """The directory the policy's own files are relative to."""
        return self.source if self.source.is_dir() else self.source.parent

    @property
    def entry_point(self) -> Path:
        return self.source / ENTRY_POINT if self.source.is_dir() else self.source


def collect_files(path: str | os.PathLike[str], *, max_files: int = MAX_FILES) -> list[tuple[str, Path]]:
    """The files a bundle of ``path`` holds, as (archive name, path on disk), sorted; raises ``BundleError``."""
    source = Path(path)
    if source.is_symlink():
        raise BundleError(f"{source} is a symbolic link; submit the file or directory it points to")
    if not source.exists():
        raise BundleError(f"{source} does not exist")
    if source.is_file():
        if source.suffix != ".py":
            raise BundleError(f"{source} is not a .py file; submit a policy .py file or a directory with {ENTRY_POINT}")
        return [(source.name, source)]
    if not source.is_dir():
        raise BundleError(f"{source} is neither a regular file nor a directory")
    if not (source / ENTRY_POINT).is_file() or (source / ENTRY_POINT).is_symlink():
        raise BundleError(f"{source} has no {ENTRY_POINT} at its top; a directory bundle needs one")
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(source):
        here = Path(dirpath)
        for name in list(dirnames):
            full = here / name
            if full.is_symlink():
                raise BundleError(f"{full} is a symbolic link; links are not allowed in a bundle")
            if name in SKIPPED_DIRS:
                dirnames.remove(name)
        dirnames.sort()
        for name in sorted(filenames):
            full = here / name
            mode = full.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise BundleError(f"{full} is a symbolic link; links are not allowed in a bundle")
            if not stat.S_ISREG(mode):
                raise BundleError(f"{full} is not a regular file (device, socket or pipe)")
            if name.endswith(SKIPPED_SUFFIXES):
                continue
            found.append((_archive_name(full, source), full))
            if len(found) > max_files:
                raise BundleError(
                    f"{source} holds more than {max_files} files (limit {max_files}); "
                    f"remove checkpoints or data you do not need at evaluation time"
                )
    return sorted(found)


def _archive_name(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, as the archive names it; raises ``BundleError`` if the server would refuse it."""
    name = path.relative_to(root).as_posix()
    size = len(os.fsencode(name))
    if size > MAX_PATH_BYTES:
        raise BundleError(f"{path} is {size} bytes long inside the bundle; the server allows at most {MAX_PATH_BYTES}")
    # A macOS name may be 255 UTF-16 units, more than 255 bytes: Linux, where the bundle is unpacked, cannot hold it.
    for part in name.split("/"):
        if len(os.fsencode(part)) > MAX_PART_BYTES:
            raise BundleError(f"{path}: the name {part!r} is over {MAX_PART_BYTES} bytes, more than Linux allows")
    return name


def make_bundle(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = MAX_BYTES,
    max_unpacked_bytes: int = MAX_UNPACKED_BYTES,
    max_files: int = MAX_FILES,
) -> Bundle:
    """Bundle a ``.py`` file (uploaded as is) or a directory (a deterministic tar.gz built in memory)."""
    source = Path(path)
    files = collect_files(source, max_files=max_files)
    sizes = [(arcname, disk, disk.stat().st_size) for arcname, disk in files]
    total = sum(size for _, _, size in sizes)
    limit = max_bytes if source.is_file() else max_unpacked_bytes
    if total > limit:
        biggest = max(sizes, key=lambda item: item[2])
        raise BundleError(
            f"{source} holds {format_bytes(total)}, over the {format_bytes(limit)} limit "
            f"(largest file: {biggest[0]}, {format_bytes(biggest[2])})"
        )
    if source.is_file():
        data = source.read_bytes()
        return Bundle(source.name, data, (source.name,), len(data), source)
    raw = io.BytesIO()
    # gzip with mtime=0 and no file name, so equal files give equal bytes and an equal bundle hash.
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for arcname, disk, size in sizes:
            info = tarfile.TarInfo(arcname)
            info.size = size
            info.mode = 0o755 if os.access(disk, os.X_OK) else 0o644
            info.mtime = 0
            with disk.open("rb") as fh:
                tar.addfile(info, fh)
    data = raw.getvalue()
    if len(data) > max_bytes:
        raise BundleError(
            f"the archive of {source} is {format_bytes(len(data))} compressed, over the {format_bytes(max_bytes)} "
            f"upload limit; leave out checkpoints you do not need at evaluation time"
        )
    name = f"{source.resolve().name or 'bundle'}.tar.gz"
    return Bundle(name, data, tuple(a for a, _, _ in sizes), total, source)
