from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest

from layersched.sdk.bundle import make_bundle, skipped_text
from layersched.sdk.errors import BundleError

POLICY = "def policy(env, task, rng):\n    return 0\n"


def make_dir(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "policy.py").write_text(POLICY)
    (root / "helpers.py").write_text("X = 1\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "weights.bin").write_bytes(b"\0" * 1000)
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "policy.cpython-311.pyc").write_bytes(b"junk")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    return root


def test_single_file_is_uploaded_as_is(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text(POLICY)
    bundle = make_bundle(path)
    assert (bundle.filename, bundle.data, bundle.files, bundle.content_type) == (
        "mine.py",
        POLICY.encode(),
        ("mine.py",),
        "text/x-python",
    )
    assert bundle.sha256 == hashlib.sha256(POLICY.encode()).hexdigest()
    assert bundle.entry_point == path


def test_directory_becomes_a_deterministic_tar_gz(tmp_path: Path) -> None:
    first = make_bundle(make_dir(tmp_path / "a"))
    second_root = make_dir(tmp_path / "b")
    os.utime(second_root / "policy.py", (1, 1))  # other times, same content
    second = make_bundle(second_root)
    assert first.filename == "a.tar.gz"
    assert first.files == ("helpers.py", "pkg/__init__.py", "policy.py", "weights.bin")
    assert first.sha256 == second.sha256
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(first.data))) as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == list(first.files)
        assert all(m.isreg() and m.mtime == 0 and m.uid == 0 for m in members)
        extracted = tar.extractfile("policy.py")
        assert extracted is not None and extracted.read() == POLICY.encode()


def test_directory_without_policy_py(tmp_path: Path) -> None:
    (tmp_path / "other.py").write_text(POLICY)
    with pytest.raises(BundleError) as exc:
        make_bundle(tmp_path)
    assert str(exc.value) == f"{tmp_path} has no policy.py at its top; a directory bundle needs one"


@pytest.mark.parametrize("where", ["file", "dir"], ids=["file-link", "dir-link"])
def test_links_are_refused(tmp_path: Path, where: str) -> None:
    root = make_dir(tmp_path / "b")
    outside = tmp_path / "secret"
    outside.mkdir()
    link = root / "data"
    if where == "file":
        (outside / "x").write_text("x")
        link.symlink_to(outside / "x")
    else:
        link.symlink_to(outside, target_is_directory=True)
    with pytest.raises(BundleError) as exc:
        make_bundle(root)
    assert str(exc.value) == f"{link} is a symbolic link; links are not allowed in a bundle"


def test_too_many_files(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "b")
    for i in range(3):
        (root / f"f{i}.txt").write_text("x")
    with pytest.raises(BundleError, match=r"holds 7 files, more than 5 files \(the limit\); remove checkpoints"):
        make_bundle(root, max_files=5)


def test_too_large_names_the_largest_file(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "b")
    with pytest.raises(BundleError) as exc:
        make_bundle(root, max_unpacked_bytes=500)
    assert str(exc.value) == f"{root} holds 1.0 kB, over the 500 B limit (largest file: weights.bin, 1.0 kB)"


def test_upload_limit_on_the_compressed_archive(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "b")
    (root / "noise.bin").write_bytes(os.urandom(5000))
    with pytest.raises(BundleError, match=r"compressed, over the 3\.0 kB upload limit"):
        make_bundle(root, max_bytes=3000)


@pytest.mark.parametrize(
    ("name", "message"),
    [("missing.py", "does not exist"), ("notes.txt", "is not a .py file")],
    ids=["missing", "not-python"],
)
def test_bad_single_files(tmp_path: Path, name: str, message: str) -> None:
    path = tmp_path / name
    if name.endswith(".txt"):
        path.write_text("x")
    with pytest.raises(BundleError, match=message):
        make_bundle(path)


def test_default_unpacked_limit_is_the_servers_50_mb(tmp_path: Path) -> None:
    """The CLI used to allow 200 MB unpacked, which the worker then refused (tests/server/test_limits.py checks the
    constants against the server's Settings)."""
    root = make_dir(tmp_path / "b")
    with (root / "checkpoint.bin").open("wb") as sparse:
        sparse.truncate(50_000_001)  # sparse: its size counts, nothing is written
    with pytest.raises(BundleError) as exc:
        make_bundle(root)
    assert str(exc.value) == f"{root} holds 50.0 MB, over the 50.0 MB limit (largest file: checkpoint.bin, 50.0 MB)"


def test_path_the_server_would_refuse(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "b")
    deep = root.joinpath(*["d" * 200] * 5)
    deep.mkdir(parents=True)
    (deep / ("w" * 30)).write_text("1")
    with pytest.raises(BundleError) as exc:
        make_bundle(root)
    assert str(exc.value) == f"{deep / ('w' * 30)} is 1035 bytes long inside the bundle; the server allows at most 1024"


def test_every_problem_of_a_directory_is_reported_in_one_run(tmp_path: Path) -> None:
    """Issue 29: a student fixes all of them at once instead of one per run."""
    root = make_dir(tmp_path / "b")
    (tmp_path / "elsewhere.py").write_text("x")
    (root / "link.py").symlink_to(tmp_path / "elsewhere.py")
    (root / "data").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(root / "pipe")
    for i in range(4):
        (root / f"f{i}.txt").write_text("x")
    with pytest.raises(BundleError) as exc:
        make_bundle(root, max_files=5)
    assert exc.value.problems == [
        f"{root / 'data'} is a symbolic link; links are not allowed in a bundle",
        f"{root / 'link.py'} is a symbolic link; links are not allowed in a bundle",
        f"{root / 'pipe'} is not a regular file (device, socket or pipe)",
        f"{root} holds 8 files, more than 5 files (the limit); remove checkpoints or data you do not need at "
        "evaluation time, or list them in .layerschedignore",
    ]
    assert str(exc.value) == f"4 problems with {root}: " + "; ".join(exc.value.problems)


def test_virtual_environments_and_caches_are_left_out_and_named(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "b")
    for venv in (".venv", "train-env"):  # any name: a venv is known by its pyvenv.cfg
        (root / venv / "lib").mkdir(parents=True)
        (root / venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (root / venv / "lib" / "big.so").write_bytes(b"\0" * 100)
    (root / "conda").mkdir()
    (root / "conda" / "conda-meta").mkdir()
    (root / ".pytest_cache").mkdir()
    (root / ".pytest_cache" / "x").write_text("x")
    (root / "layersched-kit.toml").write_text('track = "layers-v1"\n')
    bundle = make_bundle(root)
    assert bundle.files == ("helpers.py", "pkg/__init__.py", "policy.py", "weights.bin")
    assert skipped_text(bundle.skipped) == (
        "left out of the bundle: .git/ (a cache), .pytest_cache/ (a cache), .venv/ (a virtual environment), "
        "__pycache__/ (a cache), conda/ (a virtual environment), train-env/ (a virtual environment)"
    )


def test_layerschedignore_is_read_with_gitignore_syntax(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "b")
    (root / "runs" / "today").mkdir(parents=True)
    (root / "runs" / "today" / "curve.csv").write_text("1,2\n")
    (root / "notes.md").write_text("x")
    (root / "pkg" / "notes.md").write_text("x")
    (root / "pkg" / "keep.md").write_text("x")
    (root / ".layerschedignore").write_text("# training output\nruns/\n*.md\n!pkg/keep.md\n/weights.bin\n")
    bundle = make_bundle(root)
    assert bundle.files == ("helpers.py", "pkg/__init__.py", "pkg/keep.md", "policy.py")
    assert {(s.path, s.why) for s in bundle.skipped} >= {
        ("runs/", ".layerschedignore"),
        ("notes.md", ".layerschedignore"),
        ("pkg/notes.md", ".layerschedignore"),
        ("weights.bin", ".layerschedignore"),
        (".layerschedignore", "the kit's own file"),
    }


def test_an_ignore_file_that_excludes_the_entry_point_is_a_problem(tmp_path: Path) -> None:
    root = make_dir(tmp_path / "b")
    (root / ".layerschedignore").write_text("*.py\n")
    with pytest.raises(BundleError) as exc:
        make_bundle(root)
    assert str(exc.value) == ".layerschedignore excludes policy.py, the bundle's entry point"
