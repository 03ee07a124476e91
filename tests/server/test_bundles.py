"""Bundle checks: archive attacks are refused from their headers, the policy is parsed and never run."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import stat
import struct
import subprocess
import sys
import tarfile
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from layersched.server.bundles import (
    bundle_path,
    check_policy_source,
    inspect_bundle,
    store_bundle,
    unpack_bundle,
)
from layersched.server.errors import InvalidBundle, InvalidPolicy

POLICY = b"def policy(env, task, rng):\n    return 0\n"
LAB_ARGUMENTS = "(env, task, rng)"  # the lab track's policy_arguments
LIMITS = {"policy_arguments": LAB_ARGUMENTS, "max_files": 5, "max_unpacked_bytes": 100_000}


def make_zip(members: list[tuple[str, bytes, int]]) -> bytes:
    """members: (name, content, unix mode incl. file type; 0 for a plain default)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content, mode in members:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode:
                info.external_attr = mode << 16
            archive.writestr(info, content)
    return buffer.getvalue()


def make_tar(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                name, content = member
                info = tarfile.TarInfo(name)
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def tar_special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


# ------------------------------------------------------------------------------------------------- accepted bundles


def test_single_file() -> None:
    info = inspect_bundle(POLICY, "mine.py", **LIMITS)
    assert (info.format, info.entry_point, info.size) == ("py", "policy.py", len(POLICY))
    assert info.sha256 == hashlib.sha256(POLICY).hexdigest()


@pytest.mark.parametrize(
    ("fmt", "data", "entry"),
    [
        ("zip", make_zip([("policy.py", POLICY, 0), ("helper.py", b"X = 1\n", 0)]), "policy.py"),
        ("zip", make_zip([("mine/", b"", 0), ("mine/policy.py", POLICY, 0)]), "mine/policy.py"),
        ("tar.gz", make_tar([("policy.py", POLICY), ("data/weights.txt", b"1 2 3")]), "policy.py"),
        ("tgz", make_tar([("mine/policy.py", POLICY), ("mine/util.py", b"")]), "mine/policy.py"),
    ],
    ids=["zip-root", "zip-folder", "targz-root", "tgz-folder"],
)
def test_archives(fmt: str, data: bytes, entry: str) -> None:
    info = inspect_bundle(data, f"bundle.{fmt}", **LIMITS)
    assert info.entry_point == entry


@pytest.mark.parametrize(
    "source",
    [
        b"def policy(env, task, rng):\n    return 0\n",
        b"def policy(env, task, rng, extra=1):\n    return 0\n",
        b"def policy(*args):\n    return 0\n",
        b"class P:\n    def __call__(self, env, task, rng):\n        return 0\n\npolicy = P()\n",
        b"from mylib import policy\n",
        b"# -*- coding: latin-1 -*-\ndef policy(env, task, rng):\n    return '\xe9'\n",
    ],
    ids=["plain", "default-extra", "varargs", "assigned", "imported", "latin1"],
)
def test_policy_forms_accepted(source: bytes) -> None:
    check_policy_source(source, filename="policy.py", policy_arguments=LAB_ARGUMENTS)


# ------------------------------------------------------------------------------------------------- refused policies


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (b"def policy(env, task, rng):\n    return (\n", "policy.py line 2: syntax error: '(' was never closed"),
        (
            b"def act(env, task, rng):\n    return 0\n",
            "policy.py defines no top-level function 'policy(env, task, rng)'",
        ),
        (
            b"def policy(env, task):\n    return 0\n",
            "policy.py line 1: policy(env, task) must accept three positional arguments (env, task, rng)",
        ),
        (
            b"def policy(env, task, rng, *, k):\n    return 0\n",
            "policy.py line 1: policy(env, task, rng, k) must accept three positional arguments (env, task, rng)",
        ),
        (
            b"async def policy(env, task, rng):\n    return 0\n",
            "policy.py line 1: policy must be a plain function, not async",
        ),
        (
            b"if True:\n    def policy(env, task, rng):\n        return 0\n",
            "policy.py defines no top-level function 'policy(env, task, rng)'",
        ),
        (b"x = 1\x00\n", "policy.py cannot be parsed: source code string cannot contain null bytes"),
    ],
    ids=["syntax", "missing", "two-args", "kw-only", "async", "nested", "null-byte"],
)
def test_policy_refused(source: bytes, message: str) -> None:
    with pytest.raises(InvalidPolicy) as caught:
        check_policy_source(source, filename="policy.py", policy_arguments=LAB_ARGUMENTS)
    assert caught.value.message == message


def test_policy_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\ndef policy(env, task, rng):\n    return 0\n".encode()
    inspect_bundle(source, "policy.py", **LIMITS)
    assert not marker.exists()


# ------------------------------------------------------------------------------------------------- archive attacks

BOMB = b"\0" * 300_000  # compresses to a few hundred bytes, unpacks past the 100 kB limit

ATTACKS = [
    (
        "zip-dotdot",
        "b.zip",
        make_zip([("policy.py", POLICY, 0), ("../evil.py", b"", 0)]),
        "archive member '../evil.py' climbs out of the bundle with '..'",
    ),
    (
        "zip-dotdot-inner",
        "b.zip",
        make_zip([("policy.py", POLICY, 0), ("a/../../evil.py", b"", 0)]),
        "archive member 'a/../../evil.py' climbs out of the bundle with '..'",
    ),
    (
        "zip-absolute",
        "b.zip",
        make_zip([("policy.py", POLICY, 0), ("/etc/cron.d/x", b"", 0)]),
        "archive member '/etc/cron.d/x' has an absolute path",
    ),
    (
        "zip-drive",
        "b.zip",
        make_zip([("policy.py", POLICY, 0), ("C:/x.py", b"", 0)]),
        "archive member 'C:/x.py' has an absolute path",
    ),
    (
        "zip-backslash",
        "b.zip",
        make_zip([("policy.py", POLICY, 0), ("..\\evil.py", b"", 0)]),
        "archive member name '..\\\\evil.py' is not a plain relative path",
    ),
    (
        "zip-symlink",
        "b.zip",
        make_zip([("policy.py", POLICY, 0), ("link", b"/etc/passwd", stat.S_IFLNK | 0o777)]),
        "archive member 'link' is a link; bundles may hold only files and folders",
    ),
    (
        "zip-device",
        "b.zip",
        make_zip([("policy.py", POLICY, 0), ("dev", b"", stat.S_IFCHR | 0o600)]),
        "archive member 'dev' is a device or fifo; bundles may hold only files",
    ),
    (
        "zip-bomb",
        "b.zip",
        make_zip([("policy.py", POLICY, 0), ("zeros.bin", BOMB, 0)]),
        "the archive unpacks to more than 100000 bytes (at member 'zeros.bin')",
    ),
    (
        "zip-many",
        "b.zip",
        make_zip([("policy.py", POLICY, 0)] + [(f"f{i}.py", b"", 0) for i in range(6)]),
        "the archive holds more than 5 files",
    ),
    ("zip-corrupt", "b.zip", b"PK\x03\x04 not really a zip", "the zip archive cannot be read: File is not a zip file"),
    (
        "tar-dotdot",
        "b.tar.gz",
        make_tar([("policy.py", POLICY), ("../evil.py", b"")]),
        "archive member '../evil.py' climbs out of the bundle with '..'",
    ),
    (
        "tar-absolute",
        "b.tar.gz",
        make_tar([("policy.py", POLICY), ("/tmp/evil.py", b"")]),
        "archive member '/tmp/evil.py' has an absolute path",
    ),
    (
        "tar-symlink",
        "b.tar.gz",
        make_tar([("policy.py", POLICY), tar_special("l", tarfile.SYMTYPE, "/etc/passwd")]),
        "archive member 'l' is a link; bundles may hold only files and folders",
    ),
    (
        "tar-hardlink",
        "b.tar.gz",
        make_tar([("policy.py", POLICY), tar_special("h", tarfile.LNKTYPE, "policy.py")]),
        "archive member 'h' is a link; bundles may hold only files and folders",
    ),
    (
        "tar-chardev",
        "b.tar.gz",
        make_tar([("policy.py", POLICY), tar_special("null", tarfile.CHRTYPE)]),
        "archive member 'null' is a device or fifo; bundles may hold only files",
    ),
    (
        "tar-fifo",
        "b.tar.gz",
        make_tar([("policy.py", POLICY), tar_special("pipe", tarfile.FIFOTYPE)]),
        "archive member 'pipe' is a device or fifo; bundles may hold only files",
    ),
    (
        "tar-bomb",
        "b.tar.gz",
        make_tar([("policy.py", POLICY), ("zeros.bin", BOMB)]),
        "the archive unpacks to more than 100000 bytes (at member 'zeros.bin')",
    ),
    (
        "tar-many",
        "b.tgz",
        make_tar([("policy.py", POLICY)] + [(f"f{i}.py", b"") for i in range(6)]),
        "the archive holds more than 5 files",
    ),
    ("tar-corrupt", "b.tar.gz", b"\x1f\x8b\x08\x00garbage", "the tar.gz archive cannot be read: "),
    (
        "no-entry",
        "b.zip",
        make_zip([("a/policy.py", POLICY, 0), ("b/x.py", b"", 0)]),
        "the archive has no policy.py at its root or in its single top-level folder",
    ),
    ("empty", "b.zip", make_zip([("folder/", b"", 0)]), "the archive holds no files"),
    ("extension", "b.rar", b"Rar!", "bundle 'b.rar' must be a .py, .zip, .tar.gz or .tgz file"),
]


@pytest.mark.parametrize(("filename", "data", "message"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_refused_archives(filename: str, data: bytes, message: str) -> None:
    with pytest.raises((InvalidBundle, InvalidPolicy)) as caught:
        inspect_bundle(data, filename, **LIMITS)
    if message.endswith(": "):  # the library's own wording follows
        assert caught.value.message.startswith(message)
    else:
        assert caught.value.message == message


def test_archive_syntax_error_names_member() -> None:
    data = make_zip([("mine/policy.py", b"def policy(:\n", 0)])
    with pytest.raises(InvalidPolicy) as caught:
        inspect_bundle(data, "b.zip", **LIMITS)
    assert caught.value.message.startswith("mine/policy.py line 1: syntax error")


# ------------------------------------------------------------------------------------------------- storage on disk


def test_store_is_content_addressed(tmp_path: Path) -> None:
    path = store_bundle(POLICY, bundle_dir=tmp_path)
    digest = hashlib.sha256(POLICY).hexdigest()
    assert path == tmp_path / digest[:2] / digest
    assert path.read_bytes() == POLICY
    assert store_bundle(POLICY, bundle_dir=tmp_path) == path  # the same content is stored once
    assert [p.name for p in path.parent.iterdir()] == [digest]  # no temporary file left behind


@pytest.mark.parametrize("bad", ["../../etc/passwd", "ab" * 31, "Z" * 64], ids=["traversal", "short", "not-hex"])
def test_bundle_path_takes_only_digests(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="not a sha256 hex digest"):
        bundle_path(tmp_path, bad)


@pytest.mark.parametrize(
    ("fmt", "data", "entry"),
    [
        ("py", POLICY, "policy.py"),
        ("zip", make_zip([("mine/policy.py", POLICY, 0), ("mine/lib/util.py", b"X = 1\n", 0)]), "mine/policy.py"),
        ("tar.gz", make_tar([("policy.py", POLICY), ("lib/util.py", b"X = 1\n")]), "policy.py"),
    ],
    ids=["py", "zip", "tar.gz"],
)
def test_unpack_for_the_worker(tmp_path: Path, fmt: str, data: bytes, entry: str) -> None:
    stored = store_bundle(data, bundle_dir=tmp_path / "store")
    dest = tmp_path / "unpacked"
    path = unpack_bundle(stored, fmt=fmt, dest=dest, **LIMITS)  # type: ignore[arg-type]
    assert path == dest / entry
    assert path.read_bytes() == POLICY


def test_unpack_rechecks_the_stored_file(tmp_path: Path) -> None:
    evil = make_zip([("policy.py", POLICY, 0), ("../evil.py", b"", 0)])
    stored = tmp_path / "stored.zip"
    stored.write_bytes(evil)
    with pytest.raises(InvalidBundle):
        unpack_bundle(stored, fmt="zip", dest=tmp_path / "out", **LIMITS)
    assert not (tmp_path / "evil.py").exists()


# ---------------------------------------------------------------------------------- archives that cannot be unpacked


def tar_gz(members: list[tuple[str, bytes]]) -> bytes:
    """A tar.gz holding exactly these members, in this order, duplicates included (a directory for a '/' name)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for name, content in members:
            info = tarfile.TarInfo(name)
            if name.endswith("/"):
                info.type = tarfile.DIRTYPE
            info.size = 0 if info.isdir() else len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def zip_raw(members: list[tuple[str, bytes]]) -> bytes:
    """A zip holding exactly these members, in this order; zipfile warns of a duplicate name, which is the point."""
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        warnings.filterwarnings("ignore", "Duplicate name", UserWarning)
        for name, content in members:
            archive.writestr(name, content)
    return buffer.getvalue()


LONG_PART = "x" * 300
TWO_BYTE_PART = "é" * 128  # 128 characters, 256 bytes in UTF-8: the limit counts bytes
LONG_PATH = "/".join(["d" * 200] * 5) + "/" + "w" * 25  # 1030 bytes, every part under 255

UNPACKABLE = [
    (
        "file-then-folder",
        [("policy.py", POLICY), ("data", b"1"), ("data/w.npy", b"2")],
        "archive member 'data' is a file, but 'data/w.npy' needs a folder of that name",
    ),
    (
        "folder-then-file",
        [("policy.py", POLICY), ("data/w.npy", b"2"), ("data", b"1")],
        "archive member 'data' is a file, but 'data/w.npy' needs a folder of that name",
    ),
    (
        "deep-folder-then-file",
        [("policy.py", POLICY), ("a/b/c.py", b""), ("a/b", b"")],
        "archive member 'a/b' is a file, but 'a/b/c.py' needs a folder of that name",
    ),
    (
        "folder-entry-then-file",
        [("policy.py", POLICY), ("data/", b""), ("data", b"1")],
        "archive member 'data' is both a file and a folder",
    ),
    (
        "file-then-folder-entry",
        [("policy.py", POLICY), ("data", b"1"), ("data/", b"")],
        "archive member 'data' is both a file and a folder",
    ),
    (
        "duplicate",
        [("policy.py", POLICY), ("policy.py", b"import os\n")],
        "archive members 'policy.py' and 'policy.py' are the same file; the upload would check one and the worker run "
        "the other",
    ),
    (
        "duplicate-normalised",
        [("policy.py", POLICY), ("lib/./util.py", b""), ("lib//util.py", b"")],
        "archive members 'lib/./util.py' and 'lib//util.py' are the same file; the upload would check one and the "
        "worker run the other",
    ),
    (
        "duplicate-dot-slash",
        [("policy.py", POLICY), ("./policy.py", b"import os\n")],
        "archive members 'policy.py' and './policy.py' are the same file; the upload would check one and the worker "
        "run the other",
    ),
    (
        "file-named-dot",
        [("policy.py", POLICY), (".", b"x")],
        "archive member '.' names the bundle folder itself, not a file",
    ),
    (
        "long-name-part",
        [("policy.py", POLICY), (LONG_PART, b"")],
        f"archive member '{'x' * 80}...' has a name part of 300 bytes; Linux allows at most 255",
    ),
    (
        "long-utf8-part",
        [("policy.py", POLICY), (f"data/{TWO_BYTE_PART}", b"")],
        f"archive member 'data/{'é' * 75}...' has a name part of 256 bytes; Linux allows at most 255",
    ),
    (
        "long-path",
        [("policy.py", POLICY), (LONG_PATH, b"")],
        f"archive member '{LONG_PATH[:80]}...' has a path of 1030 bytes; at most 1024 are allowed",
    ),
]
BUILDERS = {"zip": zip_raw, "tar.gz": tar_gz}


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
@pytest.mark.parametrize(("members", "message"), [u[1:] for u in UNPACKABLE], ids=[u[0] for u in UNPACKABLE])
def test_unpackable_archives_refused(fmt: str, members: list[tuple[str, bytes]], message: str) -> None:
    with pytest.raises(InvalidBundle) as caught:
        inspect_bundle(
            BUILDERS[fmt](members), f"b.{fmt}", policy_arguments=LAB_ARGUMENTS, max_files=10, max_unpacked_bytes=100_000
        )
    assert caught.value.message == message


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
@pytest.mark.parametrize(("members", "message"), [u[1:] for u in UNPACKABLE], ids=[u[0] for u in UNPACKABLE])
def test_worker_unpack_raises_only_invalid_bundle(
    tmp_path: Path, fmt: str, members: list[tuple[str, bytes]], message: str
) -> None:
    """Before the fix these were accepted, and unpacking raised FileExistsError, NotADirectoryError or OSError."""
    stored = tmp_path / "stored"
    stored.write_bytes(BUILDERS[fmt](members))
    with pytest.raises(InvalidBundle) as caught:
        unpack_bundle(stored, fmt=fmt, dest=tmp_path / "out", **{**LIMITS, "max_files": 10})  # type: ignore[arg-type]
    assert caught.value.message == message


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
@pytest.mark.parametrize(
    ("members", "files"),
    [
        ([("./", b""), ("./policy.py", POLICY), ("./lib/", b""), ("./lib/u.py", b"")], ("policy.py", "lib/u.py")),
        ([("lib/", b""), ("lib/", b""), ("policy.py", POLICY)], ("policy.py",)),
        ([("policy.py", POLICY), ("y" * 255, b"")], ("policy.py", "y" * 255)),
        ([("policy.py", POLICY), ("é" * 127, b"")], ("policy.py", "é" * 127)),
    ],
    ids=["tar-C-dot", "repeated-folder-entry", "255-byte-name", "254-byte-utf8-name"],
)
def test_unpackable_edge_cases_accepted(
    tmp_path: Path, fmt: str, members: list[tuple[str, bytes]], files: tuple[str, ...]
) -> None:
    data = BUILDERS[fmt](members)
    info = inspect_bundle(data, f"b.{fmt}", **{**LIMITS, "max_files": 10})
    assert info.files == files
    stored = tmp_path / "stored"
    stored.write_bytes(data)
    entry = unpack_bundle(stored, fmt=fmt, dest=tmp_path / "out", **{**LIMITS, "max_files": 10})  # type: ignore[arg-type]
    assert entry.read_bytes() == POLICY
    assert sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file()) == sorted(
        files
    )


def test_corrupt_member_other_than_the_entry_point_is_refused(tmp_path: Path) -> None:
    """The upload used to read only policy.py: a bad CRC in another member passed, and the worker's unpack raised
    zipfile.BadZipFile."""
    data = bytearray(zip_raw([("policy.py", POLICY), ("weights.txt", b"1 2 3 4 5 6 7 8")]))
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 16, 0)  # CRC-32 of weights.txt in the central directory
    with pytest.raises(InvalidBundle) as caught:
        inspect_bundle(bytes(data), "b.zip", **LIMITS)
    assert caught.value.message == "archive member 'weights.txt' cannot be read: Bad CRC-32 for file 'weights.txt'"
    stored = tmp_path / "stored"
    stored.write_bytes(bytes(data))
    with pytest.raises(InvalidBundle):
        unpack_bundle(stored, fmt="zip", dest=tmp_path / "out", **LIMITS)


def test_too_many_folder_entries() -> None:
    members = [("policy.py", POLICY)] + [(f"d{i}/", b"") for i in range(6)]
    for fmt in ("zip", "tar.gz"):
        with pytest.raises(InvalidBundle) as caught:
            inspect_bundle(BUILDERS[fmt](members), f"b.{fmt}", **LIMITS)
        assert caught.value.message == "the archive holds more than 5 folders"


# --------------------------------------------------------------------------------- archives that lie to the readers


def zip_with_method(method: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("policy.py", POLICY)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("method", "name"), [(zipfile.ZIP_BZIP2, "bzip2"), (zipfile.ZIP_LZMA, "lzma")], ids=["bzip2", "lzma"]
)
def test_zip_methods_other_than_deflate_refused(method: int, name: str) -> None:
    with pytest.raises(InvalidBundle) as caught:
        inspect_bundle(zip_with_method(method), "b.zip", **LIMITS)
    assert caught.value.message == (
        f"archive member 'policy.py' is compressed with method {method} ({name}); "
        "bundles may use only stored or deflate"
    )


def test_zip_stored_accepted() -> None:
    assert inspect_bundle(zip_with_method(zipfile.ZIP_STORED), "b.zip", **LIMITS).entry_point == "policy.py"


def test_zip64_end_records_and_comment_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    """zipfile writes ZIP64 end records above 65,535 entries; a lowered threshold makes it write them for two."""
    buffer = io.BytesIO()
    with monkeypatch.context() as patched, zipfile.ZipFile(buffer, "w") as archive:
        patched.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)
        archive.comment = b"made by hand " * 100
        archive.writestr("policy.py", POLICY)
        archive.writestr("util.py", b"")
    data = buffer.getvalue()
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data
    assert inspect_bundle(data, "b.zip", **LIMITS).files == ("policy.py", "util.py")


def central_directory_only(entries: int, *, declared: int | None = None, zip64: bool = True) -> bytes:
    """A zip of ``entries`` central directory entries (names f000000...) and no member data at all."""
    header = struct.Struct("<4s4B4HL2L5H2L")
    directory = b"".join(
        header.pack(b"PK\x01\x02", 20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0) + b"f%06d" % i
        for i in range(entries)
    )
    count = entries if declared is None else declared
    if not zip64:
        return directory + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(directory), 0, 0)
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(directory), 0)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, len(directory), 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return directory + record + locator + end


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            central_directory_only(20_000),
            "the zip archive declares 20000 entries; bundles may hold at most 5 files and 5 folders",
        ),
        (
            central_directory_only(20_000, declared=1, zip64=False),
            "the zip archive's central directory is 1060000 bytes, more than 20940 for 10 entries",
        ),
    ],
    ids=["zip64-count", "count-that-lies"],
)
def test_zip_end_record_checked_before_listing(data: bytes, message: str) -> None:
    with pytest.raises(InvalidBundle) as caught:
        inspect_bundle(data, "b.zip", **LIMITS)
    assert caught.value.message == message


def extended_header(kind: bytes, content: bytes) -> bytes:
    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = kind, len(content)
    return info.tobuf(tarfile.USTAR_FORMAT) + content + b"\0" * (-len(content) % tarfile.BLOCKSIZE)


def tar_member(name: str, content: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    return info.tobuf(tarfile.USTAR_FORMAT) + content + b"\0" * (-len(content) % tarfile.BLOCKSIZE)


def pax_record(keyword: str, value: bytes) -> bytes:
    """One PAX record, ``"<length> <keyword>=<value>\\n"``, whose length counts itself."""
    body = f" {keyword}=".encode() + value + b"\n"
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (
            extended_header(tarfile.GNUTYPE_LONGNAME, b"p" * 70_000 + b"\0") + tar_member("x", POLICY),
            "the archive has a GNU long name of 70001 bytes; at most 65536 are allowed",
        ),
        (
            extended_header(tarfile.XHDTYPE, pax_record("comment", b"c" * 70_000)) + tar_member("policy.py", POLICY),
            "the archive has a PAX header of 70015 bytes; at most 65536 are allowed",
        ),
        (
            extended_header(tarfile.GNUTYPE_LONGNAME, b"policy.py\0") * 2000 + tar_member("x", POLICY),
            "the archive has more than 4 extended headers in a row",
        ),
        (
            # Each header under the cap, four in a row before each of 5 files: more than the stream budget allows
            # (the files' 100 kB, one header, its padding and one extended header per entry, the last record).
            b"".join(
                extended_header(tarfile.XHDTYPE, pax_record("comment", b"c" * 60_000)) * 4
                + tar_member(f"f{i}.py" if i else "policy.py", POLICY)
                for i in range(5)
            ),
            f"the tar.gz archive decompresses to more than {100_000 + 10 * (1024 + 65536) + 10240} bytes",
        ),
    ],
    ids=["gnu-long-name", "pax-header", "chain", "stream-budget"],
)
def test_tar_extended_headers_capped(stream: bytes, message: str) -> None:
    """Before the fix the first two were read whole (any size), the chain ended in RecursionError (a 500)."""
    data = gzip.compress(stream + b"\0" * 2 * tarfile.BLOCKSIZE, mtime=0)
    with pytest.raises(InvalidBundle) as caught:
        inspect_bundle(data, "b.tar.gz", **LIMITS)
    assert caught.value.message == message


def test_ordinary_pax_and_gnu_headers_accepted() -> None:
    top = "f" * 150  # names over 100 bytes need an extended header in both formats
    names = [f"{top}/policy.py", f"{top}/" + "/".join(["sub"] * 40) + "/util.py"]
    for fmt in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt) as archive:
            for name in names:
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.uname = len(POLICY), 1.5, "ü" * 40
                archive.addfile(info, io.BytesIO(POLICY))
        assert inspect_bundle(buffer.getvalue(), "b.tgz", **LIMITS).files == tuple(names)


# ------------------------------------------------------------------------------------ bombs: refused in bounded memory

MiB = 1024 * 1024
PEAK_PROBE = """
import json, sys
from layersched.server.bundles import inspect_bundle
from layersched.server.errors import ServiceError

data = open(sys.argv[1], "rb").read()
try:
    inspect_bundle(data, sys.argv[2], policy_arguments="(env, task, rng)", max_files=100, max_unpacked_bytes=50_000_000)
    outcome = "accepted"
except ServiceError as exc:
    outcome = exc.message
with open("/proc/self/status") as status:
    peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"outcome": outcome, "peak": peak_kib * 1024}))
"""


def inspect_in_a_fresh_process(path: Path, filename: str) -> tuple[str, int]:
    """What inspect_bundle says of the file, and the peak resident memory of a process that did only that."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK_PROBE, str(path), filename], capture_output=True, text=True, check=True, timeout=600
    )
    result = json.loads(done.stdout)
    return result["outcome"], result["peak"]


def stream_tar_gz(path: Path, header_kind: bytes, header_bytes: int) -> None:
    """A tar.gz of one extended header of ``header_bytes`` (written in pieces: the test process never holds it),
    then policy.py; a PAX header is one ``comment`` record."""
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        info = tarfile.TarInfo("././@LongLink")
        info.type, info.size = header_kind, header_bytes
        out.write(info.tobuf(tarfile.USTAR_FORMAT))
        fill = header_bytes
        if header_kind == tarfile.XHDTYPE:
            prefix = f"{header_bytes} comment=".encode()
            out.write(prefix)
            fill -= len(prefix) + 1
        for start in range(0, fill, MiB):
            out.write(b"a" * min(MiB, fill - start))
        if header_kind == tarfile.XHDTYPE:
            out.write(b"\n")
        out.write(b"\0" * (-header_bytes % tarfile.BLOCKSIZE) + tar_member("policy.py", POLICY) + b"\0" * 1024)


def lying_zip_member(path: Path, method: int, real_bytes: int) -> None:
    """policy.py whose central directory says 44 bytes and whose data decompresses to ``real_bytes``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive, archive.open("policy.py", "w") as member:
        member.write(POLICY)
        for start in range(0, real_bytes, MiB):
            member.write(b"#" * min(MiB, real_bytes - start))
    data = bytearray(buffer.getvalue())
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, len(POLICY))  # the uncompressed size in the central directory
    path.write_bytes(bytes(data))


BOMBS: list[tuple[str, str, Callable[[Path], None], str]] = [
    (
        "tar-gnu-long-name-300MB",
        "b.tar.gz",
        lambda path: stream_tar_gz(path, tarfile.GNUTYPE_LONGNAME, 300_000_000),
        "the archive has a GNU long name of 300000000 bytes; at most 65536 are allowed",
    ),
    (
        "tar-pax-header-300MB",
        "b.tar.gz",
        lambda path: stream_tar_gz(path, tarfile.XHDTYPE, 300_000_000),
        "the archive has a PAX header of 300000000 bytes; at most 65536 are allowed",
    ),
    (
        "zip-central-directory-900k-entries",
        "b.zip",
        lambda path: path.write_bytes(central_directory_only(900_000)),
        "the zip archive declares 900000 entries; bundles may hold at most 100 files and 100 folders",
    ),
    (
        "zip-deflate-size-lies-300MB",
        "b.zip",
        lambda path: lying_zip_member(path, zipfile.ZIP_DEFLATED, 300_000_000),
        "archive member 'policy.py' cannot be read: Bad CRC-32 for file 'policy.py'",
    ),
    (
        "zip-bzip2-size-lies-300MB",
        "b.zip",
        lambda path: lying_zip_member(path, zipfile.ZIP_BZIP2, 300_000_000),
        "archive member 'policy.py' is compressed with method 12 (bzip2); bundles may use only stored or deflate",
    ),
]


@pytest.fixture(scope="module")
def ordinary_peak(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak memory of the probe process checking an ordinary bundle: what a bomb may add to is measured from it."""
    path = tmp_path_factory.mktemp("ordinary") / "b.zip"
    path.write_bytes(make_zip([("policy.py", POLICY, 0)]))
    outcome, peak = inspect_in_a_fresh_process(path, "b.zip")
    assert outcome == "accepted"
    return peak


@pytest.mark.parametrize(("filename", "build", "message"), [b[1:] for b in BOMBS], ids=[b[0] for b in BOMBS])
def test_bombs_refused_in_bounded_memory(
    tmp_path: Path, ordinary_peak: int, filename: str, build: Callable[[Path], None], message: str
) -> None:
    """Review figures before the fix: a 1.9 MB GNU long name 4.0 GB, a 486 kB PAX header 1.5 GB (and accepted), the
    45 MB central directory about 600 MB; a 300 MB bomb of each kind took 0.6 to 1 GB here (see the report)."""
    path = tmp_path / filename
    build(path)
    assert path.stat().st_size < 50_000_000  # each one fits under the default upload limit
    outcome, peak = inspect_in_a_fresh_process(path, filename)
    assert outcome == message
    # The bomb itself is in memory (the route holds the upload); beyond it, a few tens of MB at most.
    assert peak - ordinary_peak < path.stat().st_size + 64 * MiB, f"peak {peak / MiB:.0f} MiB"
