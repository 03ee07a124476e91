"""Submission bundles: checked on upload without running or unpacking anything, stored content-addressed.

A bundle is a single ``.py`` file or an archive (``.zip``, ``.tar.gz``/``.tgz``) of a directory holding ``policy.py``
at its root or inside one top-level folder. Archives are judged from their member headers before a single byte is
written to disk: no absolute paths, no ``..``, no links, devices or fifos, at most ``max_files`` members and at most
``max_unpacked_bytes`` in total (zip and tar bombs). The entry point is parsed with :func:`ast.parse` and must bind a
top-level ``policy``; it is never imported or executed here.

Stored bundles live at ``bundle_dir/<sha256[:2]>/<sha256>``: the name is the content's hash, never the user's name.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import stat
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from layersched.server.errors import InvalidBundle, InvalidPolicy

BundleFormat = Literal["py", "zip", "tar.gz"]
ENTRY_POINT = "policy.py"
# The policy is called as policy(env, task, rng).
POLICY_ARGS = 3


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


def inspect_bundle(data: bytes, filename: str, *, max_files: int, max_unpacked_bytes: int) -> BundleInfo:
    """Check an uploaded bundle and its policy; raises InvalidBundle or InvalidPolicy naming what is wrong."""
    fmt = detect_format(filename)
    sha256 = hashlib.sha256(data).hexdigest()
    if fmt == "py":
        check_policy_source(data, filename=PurePosixPath(filename).name or ENTRY_POINT)
        return BundleInfo(fmt, sha256, len(data), ENTRY_POINT, (ENTRY_POINT,))
    members = _zip_members(data) if fmt == "zip" else _tar_members(data, max_files, max_unpacked_bytes)
    files = _check_members(members, max_files=max_files, max_unpacked_bytes=max_unpacked_bytes)
    entry = find_entry_point(files)
    source = _read_zip_member(data, entry) if fmt == "zip" else _read_tar_member(data, entry)
    check_policy_source(source, filename=entry)
    return BundleInfo(fmt, sha256, len(data), entry, tuple(files))


@dataclass(frozen=True)
class _Member:
    name: str
    kind: Literal["file", "dir", "link", "special"]
    size: int


def _zip_members(data: bytes) -> list[_Member]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise InvalidBundle(f"the zip archive cannot be read: {exc}") from exc
    members = []
    for info in infos:
        mode = info.external_attr >> 16
        kind: Literal["file", "dir", "link", "special"]
        if stat.S_ISLNK(mode):
            kind = "link"
        elif info.is_dir():
            kind = "dir"
        elif stat.S_IFMT(mode) in (0, stat.S_IFREG):
            kind = "file"
        else:
            kind = "special"
        members.append(_Member(info.filename, kind, info.file_size))
    return members


def _tar_members(data: bytes, max_files: int, max_unpacked_bytes: int) -> list[_Member]:
    members: list[_Member] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            # Walk headers one by one and stop early: reaching a header decompresses the data before it, so a
            # bomb must be refused as soon as its declared sizes pass the limit, not after a full listing.
            while (info := archive.next()) is not None:
                kind: Literal["file", "dir", "link", "special"]
                if info.issym() or info.islnk():
                    kind = "link"
                elif info.isdir():
                    kind = "dir"
                elif info.isfile():
                    kind = "file"
                else:
                    kind = "special"
                members.append(_Member(info.name, kind, info.size))
                total += info.size if kind == "file" else 0
                if len(members) > max_files or total > max_unpacked_bytes:
                    break
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InvalidBundle(f"the tar.gz archive cannot be read: {exc}") from exc
    return members


def _check_members(members: list[_Member], *, max_files: int, max_unpacked_bytes: int) -> list[str]:
    files: list[str] = []
    total = 0
    for member in members:
        _check_member_name(member.name)
        if member.kind == "link":
            raise InvalidBundle(f"archive member {member.name!r} is a link; bundles may hold only files and folders")
        if member.kind == "special":
            raise InvalidBundle(f"archive member {member.name!r} is a device or fifo; bundles may hold only files")
        if member.kind == "file":
            files.append(str(PurePosixPath(member.name)))
            total += member.size
        if len(files) > max_files:
            raise InvalidBundle(f"the archive holds more than {max_files} files")
        if total > max_unpacked_bytes:
            raise InvalidBundle(
                f"the archive unpacks to more than {max_unpacked_bytes} bytes (at member {member.name!r})"
            )
    if not files:
        raise InvalidBundle("the archive holds no files")
    return files


def _check_member_name(name: str) -> None:
    if not name or "\\" in name or "\x00" in name:
        raise InvalidBundle(f"archive member name {name!r} is not a plain relative path")
    path = PurePosixPath(name)
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        raise InvalidBundle(f"archive member {name!r} has an absolute path")
    if ".." in path.parts:
        raise InvalidBundle(f"archive member {name!r} climbs out of the bundle with '..'")


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


def _read_zip_member(data: bytes, name: str) -> bytes:
    # The listing only reads the central directory; the member's own data can still be corrupt or disagree with it
    # (a size that lies, a bad CRC, an unsupported compression): that is the uploader's error, not the server's.
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if str(PurePosixPath(info.filename)) == name:
                    return archive.read(info)
    except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError, ValueError, RuntimeError) as exc:
        raise InvalidBundle(f"archive member {name!r} cannot be read: {exc}") from exc
    raise InvalidPolicy(f"the archive has no {name!r}")  # pragma: no cover - found by find_entry_point


def _read_tar_member(data: bytes, name: str) -> bytes:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for info in archive:
                if info.isfile() and str(PurePosixPath(info.name)) == name:
                    handle = archive.extractfile(info)
                    if handle is not None:
                        return handle.read()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InvalidBundle(f"archive member {name!r} cannot be read: {exc}") from exc
    raise InvalidPolicy(f"the archive has no {name!r}")  # pragma: no cover - found by find_entry_point


def check_policy_source(source: bytes, *, filename: str) -> None:
    """Parse (never run) a policy module; it must bind a top-level ``policy`` taking (env, task, rng)."""
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
            _check_signature(node, filename)
            return
        if _binds_policy(node):
            return  # e.g. policy = make_policy(): the signature is checked when the sandbox imports it
    raise InvalidPolicy(f"{filename} defines no top-level function 'policy(env, task, rng)'")


def _binds_policy(node: ast.stmt) -> bool:
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "policy" for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == "policy"
    if isinstance(node, ast.ImportFrom | ast.Import):
        return any((alias.asname or alias.name) == "policy" for alias in node.names)
    return False


def _check_signature(node: ast.FunctionDef, filename: str) -> None:
    args = node.args
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    kw_required = sum(1 for d in args.kw_defaults if d is None)
    accepts = (positional >= POLICY_ARGS or args.vararg is not None) and required <= POLICY_ARGS
    if not accepts or kw_required:
        shown = ", ".join(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
        raise InvalidPolicy(
            f"{filename} line {node.lineno}: policy({shown}) must accept three positional arguments (env, task, rng)"
        )


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


def unpack_bundle(path: Path, *, fmt: BundleFormat, dest: Path, max_files: int, max_unpacked_bytes: int) -> Path:
    """Unpack a stored bundle into ``dest`` (for the worker) after the same checks; returns the entry point's path.

    The checks run again because the file on disk is not trusted more than the upload was.
    """
    data = path.read_bytes()
    name = {"py": "policy.py", "zip": "bundle.zip", "tar.gz": "bundle.tar.gz"}[fmt]
    checked = inspect_bundle(data, name, max_files=max_files, max_unpacked_bytes=max_unpacked_bytes)
    dest.mkdir(parents=True, exist_ok=True)
    if fmt == "py":
        (dest / ENTRY_POINT).write_bytes(data)
        return dest / ENTRY_POINT
    if fmt == "zip":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for zinfo in archive.infolist():
                if not zinfo.is_dir():
                    _write_member(dest, zinfo.filename, archive.read(zinfo))
    else:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                handle = tar.extractfile(member) if member.isfile() else None
                if handle is not None:
                    _write_member(dest, member.name, handle.read())
    return dest / checked.entry_point


def _write_member(dest: Path, name: str, content: bytes) -> None:
    target = (dest / PurePosixPath(name)).resolve()
    if not target.is_relative_to(dest.resolve()):  # already refused by the checks; belt and braces
        raise InvalidBundle(f"archive member {name!r} leaves the bundle folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
