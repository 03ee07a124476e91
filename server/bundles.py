"""Submission bundles: checked on upload without running anything, stored content-addressed.

A bundle is a single ``.py`` file or an archive (``.zip``, ``.tar.gz``/``.tgz``) of a directory holding ``policy.py``
at its root or inside one top-level folder. Archives are read within limits by :mod:`layersched.server.archives`
(nothing an archive says is believed before it is bounded), and every file is read back once, so an accepted bundle
is one the worker can unpack. The entry point is parsed with :func:`ast.parse` and must bind a top-level ``policy``;
it is never imported or executed here.

Stored bundles live at ``bundle_dir/<sha256[:2]>/<sha256>``: the name is the content's hash, never the user's name.
:func:`unpack_bundle` (the worker's side) runs the same checks and the same reader, so it raises
:class:`InvalidBundle` (or :class:`InvalidPolicy`) for anything the upload would have refused.
"""

from __future__ import annotations

import ast
import errno
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from layersched.server import archives
from layersched.server.errors import InvalidBundle, InvalidPolicy
from layersched.sim.tracks.signature import signature_problem

BundleFormat = Literal["py", "zip", "tar.gz"]
ENTRY_POINT = "policy.py"


@dataclass(frozen=True)
class BundleInfo:
    format: BundleFormat
    sha256: str
    size: int
    entry_point: str  # path of the policy module inside the bundle ("policy.py" for a single file)
    files: tuple[str, ...]


def detect_format(filename: str) -> BundleFormat:
    lower = filename.lower()
    if lower.endswith(".py"):
        return "py"
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    raise InvalidBundle(f"bundle {filename!r} must be a .py, .zip, .tar.gz or .tgz file")


def inspect_bundle(
    data: bytes, filename: str, *, policy_arguments: str, max_files: int, max_unpacked_bytes: int
) -> BundleInfo:
    """Check an uploaded bundle and its policy, whose ``def`` must take ``policy_arguments`` (the track's, such as
    ``"(env, task, rng)"``); raises InvalidBundle or InvalidPolicy naming what is wrong."""
    fmt = detect_format(filename)
    sha256 = hashlib.sha256(data).hexdigest()
    if fmt == "py":
        check_policy_source(
            data, filename=PurePosixPath(filename).name or ENTRY_POINT, policy_arguments=policy_arguments
        )
        return BundleInfo(fmt, sha256, len(data), ENTRY_POINT, (ENTRY_POINT,))
    limits = archives.Limits(max_files, max_unpacked_bytes)
    files = archives.check_members(archives.members(data, fmt, limits), limits)
    entry = find_entry_point(files)
    source = b""
    # Every file is read once, not only the entry point: a member whose data is corrupt or shorter than its header
    # says would otherwise be accepted here and fail in the worker, charged to the participant.
    for name, content in archives.file_contents(data, fmt, limits):
        if name == entry:
            source = content
    check_policy_source(source, filename=entry, policy_arguments=policy_arguments)
    return BundleInfo(fmt, sha256, len(data), entry, tuple(files))


def find_entry_point(files: list[str] | tuple[str, ...]) -> str:
    """``policy.py`` at the root, or inside the archive's single top-level folder."""
    if ENTRY_POINT in files:
        return ENTRY_POINT
    tops = {PurePosixPath(f).parts[0] for f in files}
    if len(tops) == 1:
        candidate = f"{tops.pop()}/{ENTRY_POINT}"
        if candidate in files:
            return candidate
    raise InvalidPolicy(f"the archive has no {ENTRY_POINT} at its root or in its single top-level folder")


def check_policy_source(source: bytes, *, filename: str, policy_arguments: str) -> None:
    """Parse (never run) a policy module; it must bind a top-level ``policy`` taking ``policy_arguments``."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        if exc.lineno is None:  # e.g. null bytes: no line to point at
            raise InvalidPolicy(f"{filename} cannot be parsed: {exc.msg}") from exc
        raise InvalidPolicy(f"{filename} line {exc.lineno}: syntax error: {exc.msg}") from exc
    except ValueError as exc:  # null bytes, undecodable source
        raise InvalidPolicy(f"{filename} cannot be parsed: {exc}") from exc
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "policy":
            if isinstance(node, ast.AsyncFunctionDef):
                raise InvalidPolicy(f"{filename} line {node.lineno}: policy must be a plain function, not async")
            problem = signature_problem(node, policy_arguments)
            if problem is not None:
                raise InvalidPolicy(f"{filename} line {node.lineno}: {problem}")
            return
        if _binds_policy(node):
            return  # e.g. policy = make_policy(): the signature is checked when the sandbox imports it
    raise InvalidPolicy(f"{filename} defines no top-level function 'policy{policy_arguments}'")


def _binds_policy(node: ast.stmt) -> bool:
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "policy" for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == "policy"
    if isinstance(node, ast.ImportFrom | ast.Import):
        return any((alias.asname or alias.name) == "policy" for alias in node.names)
    return False


def bundle_path(bundle_dir: Path, sha256: str) -> Path:
    """Where the bundle with this hash lives (or would live)."""
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return bundle_dir / sha256[:2] / sha256


def store_bundle(data: bytes, *, bundle_dir: Path) -> Path:
    """Write the bundle under its hash (atomically; an existing identical bundle is kept) and return the path."""
    target = bundle_path(bundle_dir, hashlib.sha256(data).hexdigest())
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def unpack_bundle(
    path: Path, *, fmt: BundleFormat, dest: Path, policy_arguments: str, max_files: int, max_unpacked_bytes: int
) -> Path:
    """Unpack a stored bundle into ``dest`` (for the worker) after the same checks; returns the entry point's path.

    The checks run again because the file on disk is not trusted more than the upload was. A bad archive raises
    :class:`InvalidBundle` (a bad policy :class:`InvalidPolicy`); an ``OSError`` means the worker's own disk failed
    (full, read-only), never the archive.
    """
    data = path.read_bytes()
    name = {"py": "policy.py", "zip": "bundle.zip", "tar.gz": "bundle.tar.gz"}[fmt]
    checked = inspect_bundle(
        data, name, policy_arguments=policy_arguments, max_files=max_files, max_unpacked_bytes=max_unpacked_bytes
    )
    dest.mkdir(parents=True, exist_ok=True)
    if fmt == "py":
        (dest / ENTRY_POINT).write_bytes(data)
        return dest / ENTRY_POINT
    for member, content in archives.file_contents(data, fmt, archives.Limits(max_files, max_unpacked_bytes)):
        _write_member(dest, member, content)
    return dest / checked.entry_point


# What a member's name can make the kernel answer; the checks refuse such names, this is belt and braces. Anything
# else (ENOSPC, EROFS, EIO) is the worker's disk and stays an OSError.
_NAME_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.EILSEQ, errno.EINVAL})


def _write_member(dest: Path, name: str, content: bytes) -> None:
    target = (dest / PurePosixPath(name)).resolve()
    if not target.is_relative_to(dest.resolve()):  # already refused by the checks; belt and braces
        raise InvalidBundle(f"archive member {name!r} leaves the bundle folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    except OSError as exc:
        if exc.errno in _NAME_ERRNOS:
            raise InvalidBundle(
                f"archive member {archives.shorten(name)!r} cannot be unpacked: {exc.strerror}"
            ) from exc
        raise
