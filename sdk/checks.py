"""Static checks of a bundle (nothing is executed) and the policy contract check, ``check_policy``.

In the spirit of Gymnasium's ``env_checker``: the checks live apart from the API, each finding names the file,
line or value at fault, and ``check_policy`` raises ``PolicyCheckError`` with the offending return value.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from layersched.sdk.bundle import ENTRY_POINT, MAX_BYTES, MAX_FILES, MAX_UNPACKED_BYTES, Bundle, skipped_text
from layersched.sdk.errors import PolicyCheckError
from layersched.sdk.progress import format_bytes
from layersched.sdk.sandbox_modules import sandbox_has, sandbox_holds
from layersched.sim.errors import PolicyError
from layersched.sim.tracks import DEFAULT_TRACK_ID, Track, get_track
from layersched.sim.tracks.signature import in_own_names, parameter_names, signature_problem

Level = Literal["ok", "warning", "error"]


@dataclass(frozen=True)
class Finding:
    level: Level
    message: str


def limits_text() -> str:
    """The bundle limits as README's contract and the CLI state them, from the constants ``make_bundle`` enforces."""
    return (
        f"at most {MAX_BYTES / 1e6:g} MB as uploaded (compressed), {MAX_UNPACKED_BYTES / 1e6:g} MB unpacked "
        f"and {MAX_FILES} files"
    )


def static_findings(bundle: Bundle, track: Track) -> list[Finding]:
    """Syntax of every ``.py`` file, the ``policy`` entry point (``track``'s arguments), imports the sandbox lacks,
    size near the limit."""
    findings = [
        Finding(
            "ok",
            f"bundle: {len(bundle.files)} file{'s' if len(bundle.files) != 1 else ''}, "
            f"{format_bytes(bundle.unpacked_bytes)} (upload {format_bytes(len(bundle.data))}); limits: {limits_text()}",
        )
    ]
    left_out = skipped_text(bundle.skipped)
    if left_out is not None:
        findings.append(Finding("ok", left_out))
    if len(bundle.data) > 0.8 * MAX_BYTES:
        findings.append(
            Finding(
                "warning",
                f"the upload is {format_bytes(len(bundle.data))}, close to the {format_bytes(MAX_BYTES)} limit",
            )
        )
    root = bundle.root
    sources = [name for name in bundle.files if name.endswith(".py")]
    local = _local_modules(bundle.files)
    trees: dict[str, ast.Module] = {}
    for name in sources:
        path = root / name
        try:
            trees[name] = ast.parse(path.read_bytes(), filename=str(path))
        except SyntaxError as exc:
            findings.append(Finding("error", f"{name}:{exc.lineno}: syntax error: {exc.msg}"))
        except ValueError as exc:  # null bytes
            findings.append(Finding("error", f"{name}: cannot be parsed: {exc}"))
    entry = bundle.entry_point.relative_to(root).as_posix()
    if entry in trees:
        findings.extend(_entry_point_findings(entry, trees[entry], track))
    # Only what the policy's import reaches runs in the sandbox: a training or plotting script beside it may import
    # what it likes (gymnasium, matplotlib).
    reached = _reached(entry, trees)
    for name, tree in trees.items():
        if name not in reached:
            continue
        for lineno, module, guarded in _imports(tree):
            if sandbox_has(module, local):
                continue
            beside = _beside_single_file(bundle, module)
            if beside is not None:
                findings.append(
                    Finding(
                        "warning" if guarded else "error",
                        f"{name}:{lineno}: imports {module!r} from {beside}, which is not in the bundle: a single "
                        f".py file is bundled alone; submit the directory instead, with this file as its {ENTRY_POINT}",
                    )
                )
            elif guarded:
                findings.append(
                    Finding(
                        "warning",
                        f"{name}:{lineno}: imports {module!r} inside try/except ImportError: the sandbox does not "
                        f"have it, so that code runs there without it (the sandbox holds {sandbox_holds()})",
                    )
                )
            else:
                findings.append(
                    Finding(
                        "error",
                        f"{name}:{lineno}: imports {module!r}, which the sandbox does not have: the server would fail "
                        f"the whole evaluation as import_error (the sandbox holds {sandbox_holds()}); drop the "
                        "import, or guard it with try/except ImportError",
                    )
                )
    findings.extend(_files_left_beside(bundle, trees))
    return findings


def _beside_single_file(bundle: Bundle, module: str) -> Path | None:
    """The module or package beside a single-file bundle that ``module`` would import locally, if there is one."""
    if not bundle.source.is_file():
        return None
    top = module.split(".", 1)[0]
    for candidate in (bundle.root / f"{top}.py", bundle.root / top):
        if candidate.exists():
            return candidate
    return None


def _files_left_beside(bundle: Bundle, trees: dict[str, ast.Module]) -> list[Finding]:
    """Warnings for files a single-file bundle's policy names in its text (``weights.pt``, ``"model.npz"``) that lie
    beside it and so are left out: the policy reads them relative to ``__file__``, which in the sandbox holds the
    one file alone."""
    if not bundle.source.is_file():
        return []
    found = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and 0 < len(node.value) <= 255:
                text = node.value
                if "/" in text or text.endswith(".py") or not (bundle.root / text).is_file():
                    continue
                if (bundle.root / text).resolve() == bundle.source.resolve():
                    continue
                found.append(
                    Finding(
                        "warning",
                        f"{name}:{node.lineno}: reads {text!r}, a file beside it that a single-file bundle leaves out; "
                        f"submit the directory instead, with this file as its {ENTRY_POINT}",
                    )
                )
    return found


def _reached(entry: str, trees: dict[str, ast.Module]) -> set[str]:
    """The bundle's files that importing ``entry`` imports, itself included (by its import statements, guarded or
    not, at any depth: what ``importlib`` loads by name is not seen)."""
    reached, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name in reached or name not in trees:
            continue
        reached.add(name)
        package = name.rsplit("/", 1)[0] if "/" in name else ""
        for node in ast.walk(trees[name]):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the file's package, one level up per extra dot
                    parts = package.split("/") if package else []
                    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                    base = ".".join([*parts, *([base] if base else [])])
                targets = [base, *(f"{base}.{alias.name}" if base else alias.name for alias in node.names)]
            for target in targets:
                path = target.replace(".", "/")
                for candidate in (f"{path}.py", f"{path}/__init__.py"):
                    if candidate in trees:
                        todo.append(candidate)
                # a package's parents run their __init__ too
                parts = path.split("/")
                todo.extend(f"{'/'.join(parts[:i])}/__init__.py" for i in range(1, len(parts)))
    return reached


def _local_modules(files: tuple[str, ...]) -> set[str]:
    names = set()
    for name in files:
        first = name.split("/", 1)[0]
        names.add(first[:-3] if first.endswith(".py") else first)
    return names


def _imports(tree: ast.Module) -> list[tuple[int, str, bool]]:
    """Absolute imports, each with whether it is inside ``try: ... except ImportError`` (a missing module is then
    handled)."""
    found: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.Try):
            catches = any(_catches_import_error(h) for h in node.handlers)
            for stmt in node.body:
                visit(stmt, guarded or catches)
            rest: list[ast.AST] = [*node.handlers, *node.orelse, *node.finalbody]
            for other in rest:
                visit(other, guarded)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, guarded) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module, guarded))
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError", "Exception") for n in names)


def _entry_point_findings(entry: str, tree: ast.Module, track: Track) -> list[Finding]:
    contract = f"policy{track.policy_arguments}"
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "policy":
            if isinstance(node, ast.AsyncFunctionDef):
                return [Finding("error", f"{entry}:{node.lineno}: policy is async; the contract is a plain function")]
            # The server's upload check (server/bundles.py) applies the same rule, so both refuse the same files.
            problem = signature_problem(node, track.policy_arguments)
            if problem is not None:
                return [Finding("error", f"{entry}:{node.lineno}: {problem} (track {track.id})")]
            return [Finding("ok", f"entry point: {contract} defined in {entry}:{node.lineno}")]
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "policy" for t in targets):
            return [Finding("ok", f"entry point: policy assigned in {entry}:{node.lineno}")]
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name) == "policy" for a in node.names):
            return [Finding("ok", f"entry point: policy imported in {entry}:{node.lineno}")]
    return [
        Finding(
            "error",
            f"{entry} defines no top-level `policy`; the contract of track {track.id} is def {contract} "
            f"(a directory bundle needs it in {ENTRY_POINT})",
        )
    ]


def check_policy(
    policy: Callable[..., Any],
    scenario: Any,
    *,
    track: str = DEFAULT_TRACK_ID,
    seed: int = 0,
    decide: Callable[..., Any] | None = None,
) -> None:
    """Check ``policy`` against the contract of ``track`` (default layers-v1) on a few decisions of ``scenario``.

    Raises ``PolicyCheckError`` naming the failing value: not callable, a signature that cannot take the contract's
    three arguments, or a reply the track refuses (for layers-v1: not an int node index, out of range, or masked).
    What the decisions are is the track's (``Track.check_policy``, on ``scenario``, a scenario of that track); an
    environment built on one, as the layers-v1 ``ClusterEnv``, stands for its ``scenario`` (the older form of this
    call). ``decide(policy, *args)``, if given, makes each call (``layersched validate`` keeps a deadline on it).
    ``seed`` must be 0: the track's check plays its own episode, of seed 0.
    """
    checked = get_track(track)
    arguments = checked.policy_arguments
    if not callable(policy):
        raise PolicyCheckError(f"policy must be a function policy{arguments} -> int, got {policy!r}")
    try:
        inspect.signature(policy).bind(*[None] * len(arguments.strip("()").split(",")))
    except TypeError as exc:
        raise PolicyCheckError(
            f"policy{inspect.signature(policy)} cannot be called as policy{arguments}: {exc}"
        ) from None
    except ValueError:
        pass  # builtins without a signature: the calls below will tell
    if seed != 0:
        raise ValueError(f"check_policy plays the track's own check episode (seed 0), got seed={seed!r}")
    scenario = getattr(scenario, "scenario", scenario)  # an env stands for the scenario it runs

    def call(*args: Any) -> Any:
        return policy(*args) if decide is None else decide(policy, *args)

    try:
        checked.check_policy(call, scenario)
    except PolicyError as exc:
        raise PolicyCheckError(in_own_names(str(exc), arguments, parameter_names(policy))) from None


def describe_path(path: Path) -> str:
    return f"{path}/" if path.is_dir() else str(path)
