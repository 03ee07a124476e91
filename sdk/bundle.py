"""Bundling a policy for upload: one ``.py`` file, or a directory with ``policy.py`` at its top, as a tar.gz.

The limits are the server's defaults (50 MB upload, 50 MB unpacked, 100 files; paths of at most 1024 bytes, name
parts of at most 255) and are checked here first, so a student learns about a forgotten checkpoint folder before
uploading it. Links are refused (the server refuses them too, and following them could ship files from outside the
directory). A directory is searched whole and every problem is reported at once (``BundleError.problems``).

Left out, and named in ``Bundle.skipped`` so that ``validate`` and ``submit`` can say so: caches (``__pycache__``,
``*.pyc``, ``.git``, ``.ipynb_checkpoints``, tool caches), virtual environments (a folder with ``pyvenv.cfg`` or
``conda-meta``: a training venv inside the kit is hundreds of MB the sandbox never uses), the kit's own files
(``layersched-kit.toml``, ``.layerschedignore``) and whatever ``.layerschedignore`` at the bundle's top excludes
(gitignore syntax). The archive is deterministic (sorted names, zero times and owners), so the same files always
give the same SHA-256, the bundle hash every evaluation records.
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
from typing import Any

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
SKIPPED_DIRS = frozenset(
    {
        "__pycache__",
        ".git",
        ".hg",
        ".svn",
        ".ipynb_checkpoints",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".hypothesis",
    }
)
SKIPPED_SUFFIXES = (".pyc", ".pyo")
IGNORE_FILE = ".layerschedignore"
# The kit's own files: what `layersched init` writes for the CLI, not for the policy (kit_track.KIT_FILE).
META_FILES = frozenset({IGNORE_FILE, "layersched-kit.toml"})
# A folder holding one of these is a virtual environment (venv, virtualenv, uv) or a conda environment.
_ENV_MARKERS = ("pyvenv.cfg", "conda-meta")


@dataclass(frozen=True)
class Skipped:
    """A file or folder of the directory that the bundle leaves out, and why."""

    path: str  # relative, ``/``-separated; a folder ends with ``/``
    why: str  # "a cache", "a virtual environment", ".layerschedignore", "the kit's own file"


@dataclass(frozen=True)
class Bundle:
    """What is uploaded: ``data`` under ``filename``; ``files`` lists the bundled paths (relative, ``/``-separated)."""

    filename: str
    data: bytes
    files: tuple[str, ...]
    unpacked_bytes: int
    source: Path
    skipped: tuple[Skipped, ...] = ()

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
    """The files a bundle of ``path`` holds, as (archive name, path on disk), sorted; raises ``BundleError`` with
    every problem found."""
    return scan_files(path, max_files=max_files)[0]


def scan_files(
    path: str | os.PathLike[str], *, max_files: int = MAX_FILES
) -> tuple[list[tuple[str, Path]], list[Skipped]]:
    """The files a bundle of ``path`` holds (archive name, path on disk), sorted, and what it leaves out; raises
    ``BundleError`` listing every problem of the directory (links, special files, names, the file count)."""
    source = Path(path)
    if source.is_symlink():
        raise BundleError(f"{source} is a symbolic link; submit the file or directory it points to")
    if not source.exists():
        raise BundleError(f"{source} does not exist")
    if source.is_file():
        if source.suffix != ".py":
            raise BundleError(f"{source} is not a .py file; submit a policy .py file or a directory with {ENTRY_POINT}")
        return [(source.name, source)], []
    if not source.is_dir():
        raise BundleError(f"{source} is neither a regular file nor a directory")
    if not (source / ENTRY_POINT).is_file() or (source / ENTRY_POINT).is_symlink():
        raise BundleError(f"{source} has no {ENTRY_POINT} at its top; a directory bundle needs one")
    ignored = _ignore_spec(source)
    found: list[tuple[str, Path]] = []
    skipped: list[Skipped] = []
    problems: list[str] = []
    for dirpath, dirnames, filenames in os.walk(source):
        here = Path(dirpath)
        for name in sorted(dirnames):
            full = here / name
            relative = full.relative_to(source).as_posix() + "/"
            why = _skipped_dir(full, name, relative, ignored)
            if why is not None:  # a link that is left out anyway is no problem
                skipped.append(Skipped(relative, why))
                dirnames.remove(name)
            elif full.is_symlink():
                problems.append(f"{full} is a symbolic link; links are not allowed in a bundle")
                dirnames.remove(name)
        dirnames.sort()
        for name in sorted(filenames):
            full = here / name
            relative = full.relative_to(source).as_posix()
            if name.endswith(SKIPPED_SUFFIXES):
                continue  # compiled caches beside their sources: not worth a line each
            if here == source and name in META_FILES:
                skipped.append(Skipped(relative, "the kit's own file"))
                continue
            if ignored is not None and ignored.match_file(relative):
                if relative == ENTRY_POINT:
                    problems.append(f"{IGNORE_FILE} excludes {ENTRY_POINT}, the bundle's entry point")
                else:
                    skipped.append(Skipped(relative, IGNORE_FILE))
                continue
            mode = full.lstat().st_mode
            if stat.S_ISLNK(mode):
                problems.append(f"{full} is a symbolic link; links are not allowed in a bundle")
            elif not stat.S_ISREG(mode):
                problems.append(f"{full} is not a regular file (device, socket or pipe)")
            else:
                try:
                    found.append((_archive_name(full, source), full))
                except BundleError as exc:
                    problems.append(str(exc))
    if len(found) > max_files:
        problems.append(
            f"{source} holds {len(found)} files, more than {max_files} files (the limit); remove checkpoints or data "
            f"you do not need at evaluation time, or list them in {IGNORE_FILE}"
        )
    if problems:
        raise BundleError.of(source, problems)
    return sorted(found), skipped


def _skipped_dir(full: Path, name: str, relative: str, ignored: Any) -> str | None:
    """Why the folder ``full`` is left out of the bundle, or None when it is bundled."""
    if name in SKIPPED_DIRS:
        return "a cache"
    if not full.is_symlink() and any((full / marker).exists() for marker in _ENV_MARKERS):
        return "a virtual environment"
    if ignored is not None and ignored.match_file(relative):
        return IGNORE_FILE
    return None


def _ignore_spec(source: Path) -> Any:
    """The patterns of ``source/.layerschedignore`` (gitignore syntax), None without the file."""
    file = source / IGNORE_FILE
    if not file.is_file():
        return None
    import pathspec

    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"cannot read {file}: {exc}") from None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def skipped_text(skipped: tuple[Skipped, ...] | list[Skipped], most: int = 6) -> str | None:
    """``left out: .venv/ (a virtual environment), __pycache__/ (a cache), ...``; None when nothing worth a word was
    left out (the kit's own files are not)."""
    named = [s for s in skipped if s.why != "the kit's own file"]
    if not named:
        return None
    shown = ", ".join(f"{s.path} ({s.why})" for s in named[:most])
    more = f" and {len(named) - most} more" if len(named) > most else ""
    return f"left out of the bundle: {shown}{more}"


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
    files, skipped = scan_files(source, max_files=max_files)
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
        return Bundle(source.name, data, (source.name,), len(data), source, tuple(skipped))
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
    return Bundle(name, data, tuple(a for a, _, _ in sizes), total, source, tuple(skipped))
