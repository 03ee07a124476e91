from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from layersched.sdk.bundle import make_bundle
from layersched.sdk.checks import Finding, check_policy, limits_text, static_findings
from layersched.sdk.errors import BundleError, PolicyCheckError
from layersched.sim.tracks import DEFAULT_TRACK_ID, TrackError, get_track
from layersched.sim.tracks.layers_v1.baselines import BASELINES
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.scenario import NodeRanges, Scenario
from tests.server import stand_in_track

README = Path(__file__).resolve().parents[2] / "README.md"
LAB_TRACK = get_track(DEFAULT_TRACK_ID)


def findings_for(tmp_path: Path, source: str, extra: dict[str, str] | None = None) -> list[Finding]:
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "policy.py").write_text(source)
    for name, text in (extra or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return [f for f in static_findings(make_bundle(root), LAB_TRACK) if not f.message.startswith("bundle:")]


def test_a_good_policy(tmp_path: Path) -> None:
    source = (
        "import numpy as np\nimport torch\nimport helpers\nfrom layersched.sim.tracks.layers_v1.env import ClusterEnv\n"
        "def policy(env, task, rng):\n    return 0\n"
    )
    assert findings_for(tmp_path, source, {"helpers.py": "import json\n"}) == [
        Finding("ok", "entry point: policy(env, task, rng) defined in policy.py:5")
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "def policy(env, task, rng):\n    return (\n",
            Finding("error", "policy.py:2: syntax error: '(' was never closed"),
        ),
        (
            "def choose(env, task, rng):\n    return 0\n",
            Finding(
                "error",
                "policy.py defines no top-level `policy`; the contract of track layers-v1 is "
                "def policy(env, task, rng) (a directory bundle needs it in policy.py)",
            ),
        ),
        (
            "def policy(env, task):\n    return 0\n",
            Finding(
                "error",
                "policy.py:1: policy(env, task) must accept three positional arguments (env, task, rng) "
                "(track layers-v1)",
            ),
        ),
        (
            "def policy(env, task, rng, *, model):\n    return 0\n",
            Finding(
                "error",
                "policy.py:1: policy(env, task, rng, model) must accept three positional arguments (env, task, rng) "
                "(track layers-v1)",
            ),
        ),
        (
            "def policy(env, task, rng, scale=1.0, *args):\n    return 0\n",
            Finding("ok", "entry point: policy(env, task, rng) defined in policy.py:1"),
        ),
        (
            "async def policy(env, task, rng):\n    return 0\n",
            Finding("error", "policy.py:1: policy is async; the contract is a plain function"),
        ),
        ("class Agent:\n    pass\npolicy = Agent()\n", Finding("ok", "entry point: policy assigned in policy.py:3")),
    ],
    ids=["syntax-error", "no-policy", "two-arguments", "keyword-only", "defaults", "async", "assigned"],
)
def test_entry_point_and_syntax(tmp_path: Path, source: str, expected: Finding) -> None:
    assert findings_for(tmp_path, source) == [expected]


def test_imports_the_sandbox_lacks_fail_with_their_line_and_guarded_ones_are_warned(tmp_path: Path) -> None:
    """Issue 29: an unguarded import the sandbox cannot satisfy fails the whole evaluation as import_error on the
    server, so it is a FAIL here (gymnasium is installed for training, not in the sandbox); a guarded one runs."""
    source = (
        "import os\nimport sklearn.linear_model\nfrom pandas import DataFrame\n"
        "try:\n    import numba\nexcept ImportError:\n    numba = None\n"
        "def policy(env, task, rng):\n    import gymnasium\n    import sympy, tomllib\n    return 0\n"
    )
    findings = findings_for(tmp_path, source)
    holds = (
        "the sandbox holds the standard library of Python 3.11, numpy 2.4.6, torch 2.13.0 (CPU; with filelock, "
        "fsspec, jinja2, markupsafe, mpmath, networkx, setuptools, sympy, typing_extensions), layersched.sim and "
        "the bundle's own modules"
    )
    tail = (
        f", which the sandbox does not have: the server would fail the whole evaluation as import_error ({holds}); "
        "drop the import, or guard it with try/except ImportError"
    )
    assert [f.message for f in findings if f.level == "error"] == [
        "policy.py:2: imports 'sklearn.linear_model'" + tail,
        "policy.py:3: imports 'pandas'" + tail,
        "policy.py:9: imports 'gymnasium'" + tail,
    ]
    assert [f.message for f in findings if f.level == "warning"] == [
        "policy.py:5: imports 'numba' inside try/except ImportError: the sandbox does not have it, so that code runs "
        f"there without it ({holds})"
    ]


def test_layersched_beyond_the_simulator_fails(tmp_path: Path) -> None:
    source = "from layersched.sdk.client import Client\ndef policy(env, task, rng):\n    return 0\n"
    assert [f.message.split(",")[0] for f in findings_for(tmp_path, source) if f.level == "error"] == [
        "policy.py:1: imports 'layersched.sdk.client'"
    ]


def test_a_file_the_single_file_policy_reads_beside_it_is_named(tmp_path: Path) -> None:
    """Weights beside a lone policy.py are left out of its bundle: the policy would not find them in the sandbox."""
    (tmp_path / "weights.pt").write_bytes(b"w")
    (tmp_path / "policy.py").write_text(
        "import os\nHERE = os.path.dirname(__file__)\nPATH = os.path.join(HERE, 'weights.pt')\n"
        "OTHER = 'missing.pt'\ndef policy(env, task, rng):\n    return 0\n"
    )
    findings = static_findings(make_bundle(tmp_path / "policy.py"), LAB_TRACK)
    assert [f.message for f in findings if f.level == "warning"] == [
        "policy.py:3: reads 'weights.pt', a file beside it that a single-file bundle leaves out; submit the "
        "directory instead, with this file as its policy.py"
    ]


# ---------------------------------------------------------------------------------------------- check_policy


def small_env() -> ClusterEnv:
    return ClusterEnv(Scenario(n_tasks=20))


def test_check_policy_accepts_the_baselines() -> None:
    for policy in BASELINES.values():
        check_policy(policy, small_env())


def test_check_policy_accepts_numpy_integers() -> None:
    check_policy(lambda env, task, rng: np.int64(np.argmax(env.mask(task))), small_env())


def masked_node(env: ClusterEnv, task: Any) -> int:
    return int(np.flatnonzero(~env.mask(task))[0])


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            lambda env, task, rng: 3.0,
            "step 0: policy returned 3.0 (float); return an int node index such as int(np.argmax(scores))",
        ),
        (lambda env, task, rng: None, "step 0: policy returned None of type NoneType, expected an int node index"),
        (lambda env, task, rng: True, "step 0: policy returned True of type bool, expected an int node index"),
        (lambda env, task, rng: 10, "step 0: policy returned node 10, outside 0..9"),
        (lambda env, task, rng: -1, "step 0: policy returned node -1, outside 0..9"),
        (
            lambda env, task: 0,
            "policy(env, task) cannot be called as policy(env, task, rng): too many positional arguments",
        ),
        ("not a function", "policy must be a function policy(env, task, rng) -> int, got 'not a function'"),
    ],
    ids=["float", "none", "bool", "too-high", "negative", "two-arguments", "not-callable"],
)
def test_check_policy_names_the_failing_value(policy: Any, message: str) -> None:
    with pytest.raises(PolicyCheckError) as exc:
        check_policy(policy, small_env())
    assert str(exc.value) == message


def test_check_policy_catches_a_masked_node() -> None:
    # A scenario whose storage range cannot hold every image: some node is masked for some task.
    env = ClusterEnv(Scenario(n_tasks=50, nodes=NodeRanges(storage_gb=(0.2, 2.0))))

    def policy(env: ClusterEnv, task: Any, rng: random.Random) -> int:
        mask = env.mask(task)
        return int(np.flatnonzero(~mask)[0]) if not mask.all() else int(np.argmax(mask))

    # The track's check plays its own few decisions (5 on layers-v1): this scenario masks a node at step 0 already.
    with pytest.raises(PolicyCheckError, match=r"^step \d+: policy returned node \d+, which cannot store image \d+"):
        check_policy(policy, env)


def test_check_policy_leaves_the_decisions_to_the_track_and_keeps_its_own_checks() -> None:
    stand_in_track.register()
    calls: list[tuple[Any, ...]] = []

    def decide(policy: Any, *args: Any) -> Any:
        calls.append(args)
        return policy(*args)

    check_policy(lambda bins, rng: 0, 3, track="standin-v1", decide=decide)
    assert [bins for bins, _rng in calls] == [[0, 1, 2], [0, 1, 2, 3]]
    with pytest.raises(PolicyCheckError) as exc:
        check_policy(lambda bins, rng: 7, 3, track="standin-v1")
    assert str(exc.value) == "step 0: policy returned 7; the stand-in wants 0"
    # The signature is bound before the track is asked anything.
    with pytest.raises(PolicyCheckError) as exc:
        check_policy(lambda bins: 0, 3, track="standin-v1")
    # ... as the track's contract names the arguments, not the lab's.
    assert str(exc.value) == "policy(bins) cannot be called as policy(bins, rng): too many positional arguments"


def test_check_policy_names_an_unknown_track_and_a_seed_it_cannot_play() -> None:
    with pytest.raises(TrackError, match=r"^unknown track 'packing-v9'; known tracks: "):
        check_policy(lambda env, task, rng: 0, Scenario(n_tasks=20), track="packing-v9")
    with pytest.raises(ValueError, match=r"^check_policy plays the track's own check episode \(seed 0\), got seed=3$"):
        check_policy(lambda env, task, rng: 0, Scenario(n_tasks=20), seed=3)


# ---------------------------------------------------------------------------------- the limits as stated


def _sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no room on disk (the limits count sizes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def test_the_stated_limits_are_the_enforced_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from layersched.sdk.bundle import MAX_BYTES, MAX_FILES, MAX_UNPACKED_BYTES
    from layersched.sdk.cli import main

    stated = limits_text()
    assert stated == (
        f"at most {MAX_BYTES // 10**6} MB as uploaded (compressed), {MAX_UNPACKED_BYTES // 10**6} MB unpacked and "
        f"{MAX_FILES} files"
    )
    contract = README.read_text().split("**The contract.**", 1)[1].split("\n\n", 1)[0]
    assert stated in " ".join(contract.split())
    for command in ("validate", "submit"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert stated in " ".join(capsys.readouterr().out.split())
    bundle = tmp_path / "bundle"
    _sparse(bundle / "policy.py", 0)
    _sparse(bundle / "weights.bin", MAX_UNPACKED_BYTES)
    assert make_bundle(bundle).unpacked_bytes == MAX_UNPACKED_BYTES
    _sparse(bundle / "one_byte_more.bin", 1)
    with pytest.raises(BundleError, match=f"over the {MAX_UNPACKED_BYTES / 1e6:.1f} MB limit"):
        make_bundle(bundle)
    single = _sparse(tmp_path / "big.py", MAX_BYTES + 1)
    with pytest.raises(BundleError, match=f"over the {MAX_BYTES / 1e6:.1f} MB limit"):
        make_bundle(single)
    many = tmp_path / "many"
    for name in ["policy.py"] + [f"module{i}.py" for i in range(1, MAX_FILES)]:
        _sparse(many / name, 0)
    assert len(make_bundle(many).files) == MAX_FILES
    _sparse(many / "extra.py", 0)
    with pytest.raises(BundleError, match=f"more than {MAX_FILES} files"):
        make_bundle(many)


def test_the_report_states_the_limits(tmp_path: Path) -> None:
    (tmp_path / "policy.py").write_text("def policy(env, task, rng):\n    return 0\n")
    first = static_findings(make_bundle(tmp_path / "policy.py"), LAB_TRACK)[0]
    assert first == Finding("ok", f"bundle: 1 file, 41 B (upload 41 B); limits: {limits_text()}")


# ---------------------------------------------------------------------------------- beside a single file


@pytest.mark.parametrize("sibling", ["helper.py", "helper/__init__.py"], ids=["module", "package"])
def test_a_single_file_importing_its_sibling_is_an_error(tmp_path: Path, sibling: str) -> None:
    (tmp_path / sibling).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / sibling).write_text("X = 1\n")
    (tmp_path / "mine.py").write_text(
        "import json\nfrom helper import X\n\ndef policy(env, task, rng):\n    return X\n"
    )
    beside = tmp_path / sibling.split("/")[0]
    assert static_findings(make_bundle(tmp_path / "mine.py"), LAB_TRACK)[2:] == [
        Finding(
            "error",
            f"mine.py:2: imports 'helper' from {beside}, which is not in the bundle: a single .py file is bundled "
            f"alone; submit the directory instead, with this file as its policy.py",
        )
    ]


def test_a_workflows_pair_gets_the_action_hint_in_the_policys_own_names() -> None:
    """Issue 29: a (candidate, VM) tuple is told how to make the one int action, in the names the student chose."""
    from layersched.sim.evalset import evalset_file, load_evalset

    scenario = load_evalset(evalset_file("workflows-sample")).scenarios[0].scenario

    def pair(obs: Any, tasks: Any, rng: Any) -> Any:
        return (0, 0)

    with pytest.raises(PolicyCheckError) as exc:
        check_policy(pair, scenario, track="workflows-v1")
    assert str(exc.value) == (
        "step 0: action (0, 0) (tuple) is not an int (a (candidate, VM) pair is one int action: return "
        "obs.action(c, v), c * obs.n_vms + v)"
    )

    def contract_names(view: Any, candidates: Any, rng: Any) -> Any:
        return [0, 0]

    with pytest.raises(PolicyCheckError, match=r"return view\.action\(c, v\), c \* view\.n_vms \+ v\)$"):
        check_policy(contract_names, scenario, track="workflows-v1")


def test_only_what_the_policy_imports_is_held_to_the_sandbox(tmp_path: Path) -> None:
    """A training script beside the policy may import gymnasium (the sandbox never imports it); a module the policy
    imports, directly or through a package, may not."""
    source = "from lib import net\ndef policy(env, task, rng):\n    return 0\n"
    extra = {
        "train.py": "import gymnasium\nimport matplotlib\n",
        "lib/__init__.py": "",
        "lib/net.py": "from . import layers\n",
        "lib/layers.py": "import pandas\n",
    }
    errors = [f.message.split(",")[0] for f in findings_for(tmp_path, source, extra) if f.level == "error"]
    assert errors == ["lib/layers.py:1: imports 'pandas'"]
