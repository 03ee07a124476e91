"""Bundle checks: archive attacks are refused from their headers, the policy is parsed and never run."""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile
import zipfile
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
LIMITS = {"max_files": 5, "max_unpacked_bytes": 100_000}


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
    check_policy_source(source, filename="policy.py")


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
        check_policy_source(source, filename="policy.py")
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
