"""No import circle among the project's modules (issue 17, item 6).

A circle means two modules hold one idea between them, or one reaches "up" the flow (STYLE.md: data flows
sdk -> server -> worker -> sandbox): the worker's runner imported its backends while they took `CHANNEL_DIR`,
`SOCKET_NAME` and `BackendUnavailable` from the runner. Every import counts, the ones inside functions and under
`TYPE_CHECKING` too: deferring an import hides a circle from the interpreter, not from a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The folders behind the `layersched.*` packages (pyproject.toml's package-dir).
PACKAGES = ("sim", "sdk", "server", "worker")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["layersched", *parts])


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the project's packages, by its dotted import name."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "starter" in path.relative_to(root).parts:
                continue  # the student's starter kit is copied out, never imported as ours
            modules[_module_name(path, root)] = path
    return modules


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join([*base, node.module] if node.module else base)
        else:
            target = node.module or ""
        yield target
        for alias in node.names:
            yield f"{target}.{alias.name}"  # `from pkg import submodule`


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Each project module -> the project modules it imports anywhere in its text."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[name] = {
            target
            for node in ast.walk(tree)
            for target in _imported(node, name, is_package)
            if target in modules and target != name
        }
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import circle as `[a, b, ..., a]`, or None when the graph is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
    ],
    ids=["chain", "pair", "circle-below-the-start"],
)
def test_find_cycle(graph: dict[str, set[str]], expected: list[str] | None) -> None:
    assert find_cycle(graph) == expected


def test_the_graph_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    (tmp_path / "worker").mkdir()
    (tmp_path / "worker" / "__init__.py").write_text("")
    (tmp_path / "worker" / "a.py").write_text("def f():\n    from layersched.worker import b\n")
    (tmp_path / "worker" / "b.py").write_text("from .a import f\n")
    graph = import_graph(project_modules(tmp_path))
    assert graph["layersched.worker.a"] == {"layersched.worker", "layersched.worker.b"}
    assert find_cycle(graph) == ["layersched.worker.a", "layersched.worker.b", "layersched.worker.a"]


def test_the_project_has_no_import_circle() -> None:
    modules = project_modules()
    assert "layersched.worker.sandbox.runner" in modules and "layersched.server.app" in modules
    cycle = find_cycle(import_graph(modules))
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def _reaching(graph: Mapping[str, set[str]], inside: str, outside: Callable[[str], bool]) -> list[tuple[str, str]]:
    return sorted(
        (module, target)
        for module, targets in graph.items()
        if module.startswith(inside)
        for target in targets
        if outside(target)
    )


def test_the_sandbox_imports_nothing_of_the_pipeline() -> None:
    """worker/sandbox/ is usable without Celery and the pipeline around it (issue 17 item 6)."""
    graph = import_graph(project_modules())
    assert {
        "layersched.worker.sandbox.runner",
        "layersched.worker.sandbox.harness",
        "layersched.worker.pipeline",
    } <= set(graph)
    pipeline = _reaching(
        graph,
        "layersched.worker.sandbox",
        lambda t: (
            t.startswith("layersched.worker")
            and not t.startswith("layersched.worker.sandbox")
            and t != "layersched.worker"
        ),
    )
    assert pipeline == []


def test_the_simulator_and_its_tracks_import_nothing_of_the_service() -> None:
    """sim/ (tracks included) imports nothing of sdk, server or worker: the sandbox image holds sim alone."""
    graph = import_graph(project_modules())
    assert "layersched.sim.tracks.layers_v1.sandbox" in graph
    service = _reaching(graph, "layersched.sim", lambda t: not t.startswith("layersched.sim"))
    assert service == []


def _reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen, stack = {start}, [start]
    while stack:
        for target in graph[stack.pop()] - seen:
            seen.add(target)
            stack.append(target)
    return seen


def test_the_image_holds_every_worker_module_the_harness_imports() -> None:
    """The sandbox image copies a list of worker/sandbox modules (build_image.sh, the Dockerfile): a module the
    harness imports that is missing from it fails only when a container starts, so the lists are checked here."""
    import re

    graph = import_graph(project_modules())
    needed = {
        module.removeprefix("layersched.worker.sandbox.") + ".py"
        for module in _reachable(graph, "layersched.worker.sandbox.harness")
        if module.startswith("layersched.worker.sandbox.")
    } | {"__init__.py"}
    script = (ROOT / "worker" / "sandbox" / "build_image.sh").read_text()
    listed = re.search(r"^SANDBOX_MODULES=\(([^)]*)\)", script, re.MULTILINE)
    assert listed is not None
    dockerfile = (ROOT / "worker" / "sandbox" / "Dockerfile").read_text()
    copied = set(re.findall(r"worker/sandbox/([a-z_]+\.py)", dockerfile))
    assert set(listed.group(1).split()) == needed
    assert copied == needed
