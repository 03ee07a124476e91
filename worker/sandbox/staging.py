"""Checking a submission's bundle against the bundle rules and copying it where the sandbox reads it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import BundleError


def stage_bundle(source: Path, run_dir: Path, limits: SandboxLimits) -> tuple[Path, str]:
    """Check a bundle (a ``.py`` file or a directory with ``policy.py``) and copy it into ``run_dir/bundle``.

    Returns the staged directory and the bundle's SHA-256 (over sorted relative paths and file contents), which
    identifies the submission in results and seeds the policy's rng. Raises ``BundleError`` naming the problem.
    """
    source = Path(source)
    files: list[tuple[str, Path]] = []
    if source.is_file():
        if source.suffix != ".py":
            raise BundleError(f"a single-file bundle must be a .py file, got {source.name!r}")
        files.append(("policy.py", source))
    elif source.is_dir():
        for path in sorted(source.rglob("*")):
            rel = path.relative_to(source).as_posix()
            if path.is_symlink():
                raise BundleError(f"bundle contains a symbolic link: {rel!r}")
            if path.is_dir():
                continue
            if not path.is_file():
                raise BundleError(f"bundle contains a special file: {rel!r}")
            if "__pycache__" in path.parts:
                continue
            files.append((rel, path))
            if len(files) > limits.bundle_files:
                raise BundleError(f"bundle has more than {limits.bundle_files} files")
        if not (source / "policy.py").is_file():
            raise BundleError(f"bundle directory {str(source)!r} has no policy.py")
    else:
        raise BundleError(f"bundle {str(source)!r} does not exist")
    total = sum(path.stat().st_size for _, path in files)
    if total > limits.bundle_bytes:
        raise BundleError(f"bundle is {total} bytes, more than the limit of {limits.bundle_bytes} bytes")
    staged = run_dir / "bundle"
    digest = hashlib.sha256()
    for rel, path in files:
        data = path.read_bytes()
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
        target = staged / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o644)
    for directory in [staged, *(p for p in staged.rglob("*") if p.is_dir())]:
        directory.chmod(0o755)
    return staged, digest.hexdigest()
