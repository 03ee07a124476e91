"""What every sandbox backend must do, as a test-class mixin: test_runner_process.py and test_sandbox_docker.py
subclass ``SandboxContract`` with ``backend = "process"`` or ``"docker"``.

Episodes are short (tens of tasks) so the suite stays fast; the rules do not depend on the length.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import re
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.tracks.layers_v1.baselines import get_baseline
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import EpisodeResult, run_episode
from layersched.sim.tracks.layers_v1.scenario import CloudNode, NodeRanges, Scenario
from layersched.worker.sandbox.episode_process import seed_globals
from layersched.worker.sandbox.limits import MiB, SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome
from layersched.worker.sandbox.runner import SandboxSession, open_sandbox

POLICIES = Path(__file__).parent / "policies"
LAB = Scenario(n_tasks=60)
CLOUD = Scenario(n_tasks=40, arrival_rate=0.6, cloud=CloudNode())
SMALL_NODES = Scenario(n_tasks=40, nodes=NodeRanges(storage_gb=(0.2, 2.0)))  # some nodes cannot hold some images
EPISODES = [EpisodeSpec(f"e{i}", seed=100 + i) for i in range(3)]

KILL_PARENT = """
    import os, signal, time

    def policy(env, task, rng):
        if env.k == 1:
            os.kill(os.getppid(), signal.SIGKILL)
            time.sleep(0.5)  # had it worked, this process would die here, with its harness
        return 0
"""

# Greedy, then a change to its view that it does not undo: every decision must still see the true state. Written
# as a student's policy may be, against the lab's old import path (sim/baselines.py re-exports the track's module):
# the sandbox image must hold that path too.
VANDAL = """
    import copy

    from layersched.sim.baselines import get_baseline

    greedy = get_baseline("Greedy")

    def policy(env, task, rng):
        action = greedy(env, task, rng)
        {change}
        return action
"""
VANDALISM = {
    "zeroes-slots-and-download-free": (
        "for node in env.nodes: node.slots[:] = [0.0] * len(node.slots); node.download_free = 0.0"
    ),
    "rebinds-nodes": "env.nodes = [copy.copy(node) for node in reversed(env.nodes)]",
    "rebinds-slots": "for node in env.nodes: node.slots = [0.0]",
    "deletes-layers": "for node in env.nodes: node.layers.clear()",
    "lookahead-not-undone": "env.place(task, (action + 1) % env.n_nodes)",
}


def make_job(session: SandboxSession, name: str, scenario: Scenario, episode: EpisodeSpec) -> EpisodeJob:
    return EpisodeJob(name, scenario, episode, policy_seed(session.bundle_sha256, scenario.content_hash, episode.id))


def in_process(policy: Callable[..., Any], scenario: Scenario, episode: EpisodeSpec, seed: int) -> EpisodeResult:
    """The trusted in-process path, with the globals seeded as the harness seeds them."""
    seed_globals(seed)
    return run_episode(ClusterEnv(scenario), policy, episode.workload_rng(), random.Random(seed))


def import_bundle_policy(bundle: Path) -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location(f"bundle_{bundle.name}", bundle / "policy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    seed_globals(0)
    spec.loader.exec_module(module)
    return module.policy  # type: ignore[no-any-return]


def write_policy(tmp_path: Path, source: str, name: str = "policy.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def round_robin(env: ClusterEnv, task: Any, rng: random.Random, state: dict[str, int]) -> int:
    """What the tamperer places, computed on an untouched environment."""
    mask = env.mask(task)
    node = state["count"] % env.n_nodes
    while not mask[node]:
        node = (node + 1) % env.n_nodes
    state["count"] += 1
    return node


class SandboxContract:
    backend: ClassVar[str]

    def open(self, bundle: Path, **limits: Any) -> SandboxSession:
        return open_sandbox(bundle, backend=self.backend, limits=SandboxLimits(**limits))  # type: ignore[arg-type]

    def run(
        self, bundle: Path, scenario: Scenario = LAB, episodes: list[EpisodeSpec] | None = None, **limits: Any
    ) -> tuple[SandboxSession, list[EpisodeOutcome]]:
        with self.open(bundle, **limits) as session:
            outcomes = [session.run_episode(make_job(session, "lab", scenario, ep)) for ep in episodes or EPISODES]
        return session, outcomes

    # ------------------------------------------------------------------ scores

    @pytest.mark.parametrize("scenario", [LAB, CLOUD], ids=["lab", "cloud"])
    @pytest.mark.parametrize("bundle", ["greedy", "greedy/policy.py"], ids=["directory", "single-file"])
    def test_greedy_matches_in_process(self, scenario, bundle):
        greedy = get_baseline("Greedy")
        with self.open(POLICIES / bundle) as session:
            for episode in EPISODES:
                job = make_job(session, "s", scenario, episode)
                outcome = session.run_episode(job)
                expected = in_process(greedy, scenario, episode, job.policy_seed)
                assert (outcome.status, outcome.message) == ("ok", "")
                assert outcome.trace_hash == expected.trace_hash
                assert outcome.metrics == expected.metrics
                assert outcome.n_actions == scenario.n_tasks

    def test_torch_mlp_matches_in_process(self):
        policy = import_bundle_policy(POLICIES / "torch_mlp")
        with self.open(POLICIES / "torch_mlp") as session:
            assert session.startup.info["torch"] == "2.13.0+cpu"
            for episode in EPISODES[:2]:
                job = make_job(session, "lab", LAB, episode)
                outcome = session.run_episode(job)
                expected = in_process(policy, LAB, episode, job.policy_seed)
                assert (outcome.status, outcome.message) == ("ok", "")
                assert outcome.trace_hash == expected.trace_hash
                assert outcome.metrics == expected.metrics

    @pytest.mark.parametrize("bundle", ["greedy", "torch_mlp"])
    def test_two_sandboxes_give_identical_traces(self, bundle):
        _, first = self.run(POLICIES / bundle)
        _, second = self.run(POLICIES / bundle)
        assert [o.status for o in first] == ["ok"] * len(EPISODES)
        assert [o.trace_hash for o in first] == [o.trace_hash for o in second]
        assert len({o.trace_hash for o in first}) == len(EPISODES)  # the episodes do differ

    def test_an_episode_reruns_alone_with_the_same_actions(self):
        _, all_three = self.run(POLICIES / "torch_mlp")
        _, alone = self.run(POLICIES / "torch_mlp", episodes=[EPISODES[1]])
        assert alone[0].trace_hash == all_three[1].trace_hash

    def test_tampering_with_the_replica_changes_nothing(self):
        _, outcomes = self.run(POLICIES / "tamperer", episodes=EPISODES[:2])
        for episode, outcome in zip(EPISODES[:2], outcomes, strict=True):
            state = {"count": 0}  # each episode process starts from the module as imported
            expected = run_episode(
                ClusterEnv(LAB), functools.partial(round_robin, state=state), episode.workload_rng(), random.Random(0)
            )
            assert (outcome.status, outcome.message) == ("ok", "")
            assert outcome.trace_hash == expected.trace_hash
            assert outcome.metrics == expected.metrics
            assert "network: blocked" in outcome.stdout

    @pytest.mark.parametrize("change", list(VANDALISM.values()), ids=list(VANDALISM))
    def test_a_policy_that_changes_its_view_sees_the_truth_at_every_decision(self, tmp_path, change):
        bundle = write_policy(tmp_path, VANDAL.format(change=change))
        greedy = get_baseline("Greedy")
        with self.open(bundle) as session:
            for episode in EPISODES[:2]:
                job = make_job(session, "lab", LAB, episode)
                outcome = session.run_episode(job)
                expected = in_process(greedy, LAB, episode, job.policy_seed)
                assert (outcome.status, outcome.message) == ("ok", "")
                assert outcome.trace_hash == expected.trace_hash  # exactly Greedy's actions
                assert outcome.metrics == expected.metrics

    # ------------------------------------------------------------------ failures

    def test_crash(self):
        _, outcomes = self.run(POLICIES / "crash", episodes=EPISODES[:2])
        for outcome in outcomes:
            assert outcome.status == "crash"
            assert outcome.message.startswith("step 3: policy raised an exception\nTraceback")
            assert outcome.message.endswith('raise RuntimeError("boom at step 3")\nRuntimeError: boom at step 3')
            assert outcome.stdout == "".join(f"placing task {k}\n" for k in range(4))
            assert outcome.stderr == "about to fail\n"
            assert (outcome.n_actions, outcome.metrics) == (3, None)

    def test_import_error(self):
        _, outcomes = self.run(POLICIES / "import_error", episodes=EPISODES[:2])
        for outcome in outcomes:
            assert outcome.status == "import_error"
            assert outcome.message.startswith("policy import failed:\nTraceback")
            assert outcome.message.endswith("ModuleNotFoundError: No module named 'layersched_no_such_module'")
            assert outcome.stdout == "importing the policy\n"
            assert outcome.n_actions == 0

    def test_policy_without_policy_function(self, tmp_path):
        bundle = write_policy(tmp_path, "def choose(env, task, rng):\n    return 0\n")
        _, outcomes = self.run(bundle, episodes=EPISODES[:1])
        assert outcomes[0].status == "import_error"
        assert outcomes[0].message.endswith("ImportError: policy.py defines no callable 'policy' (found NoneType)")

    def test_hanging_import_times_out(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import time

            time.sleep(60)

            def policy(env, task, rng):
                return 0
        """,
        )
        started = time.monotonic()
        _, outcomes = self.run(bundle, episodes=EPISODES[:2], startup_seconds=2.0)
        for outcome in outcomes:
            assert (outcome.status, outcome.message) == ("timeout", "policy import did not finish within 2 s")
        assert time.monotonic() - started < 10

    def test_hang_times_out_and_the_sandbox_survives(self):
        started = time.monotonic()
        session, outcomes = self.run(POLICIES / "hang", episodes=EPISODES[:2], decision_seconds=0.5)
        for outcome in outcomes:
            assert outcome.status == "timeout"
            assert outcome.message == "step 2: no action within the per-decision deadline of 0.5 s"
            assert outcome.n_actions == 2
        assert session.restarts == 0  # the harness killed the hung process; no new sandbox was needed
        assert time.monotonic() - started < 15

    def test_invalid_action(self):
        _, outcomes = self.run(POLICIES / "invalid_action", episodes=EPISODES[:1])
        assert outcomes[0].status == "invalid_action"
        assert outcomes[0].message == "step 5: policy returned node 10, outside 0..9"
        assert outcomes[0].n_actions == 5

    @pytest.mark.parametrize(
        ("expression", "message"),
        [
            ("1.0", "step 0: policy returned 1.0 of type float, expected an int node index"),
            ("True", "step 0: policy returned True of type bool, expected an int node index"),
            ("None", "step 0: policy returned None of type NoneType, expected an int node index"),
            ("'3'", "step 0: policy returned '3' of type str, expected an int node index"),
            ("-1", "step 0: policy returned node -1, outside 0..9"),
            ("10**30", "step 0: policy returned an integer of 100 bits of type int, expected an int node index"),
        ],
        ids=["float", "bool", "none", "str", "negative", "huge"],
    )
    def test_invalid_values(self, tmp_path, expression, message):
        bundle = write_policy(tmp_path, f"def policy(env, task, rng):\n    return {expression}\n")
        _, outcomes = self.run(bundle, episodes=EPISODES[:1])
        assert (outcomes[0].status, outcomes[0].message) == ("invalid_action", message)

    def test_masked_node(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import numpy as np

            def policy(env, task, rng):
                banned = np.flatnonzero(~env.mask(task))
                return int(banned[0]) if len(banned) else int(np.flatnonzero(env.mask(task))[0])
        """,
        )
        _, outcomes = self.run(bundle, SMALL_NODES, episodes=EPISODES[:1])
        assert outcomes[0].status == "invalid_action"
        assert re.fullmatch(
            r"step \d+: policy returned node \d, which cannot store image \d+ "
            r"\(\d+\.\d MB > \d+\.\d MB\)",
            outcomes[0].message,
        ), outcomes[0].message

    def test_garbage_on_the_channel(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import os, stat

            def policy(env, task, rng):
                for fd in range(3, 64):
                    try:
                        if stat.S_ISSOCK(os.fstat(fd).st_mode):
                            os.write(fd, b"\\xff\\xff\\xff\\xff")
                    except OSError:
                        pass
                return 0
        """,
        )
        _, outcomes = self.run(bundle, episodes=EPISODES[:1])
        assert outcomes[0].status == "protocol_error"
        assert outcomes[0].message == "step 0: frame announces 4294967295 bytes, more than the maximum of 4194304 bytes"

    def test_reply_for_another_step(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import json, os, stat, struct

            def policy(env, task, rng):
                payload = json.dumps({"type": "action", "step": 7, "nonce": 0, "action": 0}).encode()
                for fd in range(3, 64):
                    try:
                        if stat.S_ISSOCK(os.fstat(fd).st_mode):
                            os.write(fd, struct.pack(">I", len(payload)) + payload)
                    except OSError:
                        pass
                return 0
        """,
        )
        _, outcomes = self.run(bundle, episodes=EPISODES[:1])
        assert (outcomes[0].status, outcomes[0].message) == (
            "protocol_error",
            "step 0: reply is for step 7, expected step 0",
        )

    def test_output_is_capped_and_counted(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import sys

            def policy(env, task, rng):
                if env.k == 0:
                    print("x" * 5000, end="")
                    print("y" * 300, end="", file=sys.stderr)
                return 0
        """,
        )
        _, outcomes = self.run(bundle, episodes=EPISODES[:1], output_bytes=1000)
        outcome = outcomes[0]
        assert outcome.status == "ok"
        assert (outcome.stdout, outcome.stdout_dropped) == ("x" * 1000, 4000)
        assert (outcome.stderr, outcome.stderr_dropped) == ("y" * 300, 0)

    def test_episode_budget(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import time

            def policy(env, task, rng):
                time.sleep(0.05)
                return 0
        """,
        )
        _, outcomes = self.run(bundle, episodes=EPISODES[:1], episode_seconds=0.5)
        assert outcomes[0].status == "timeout"
        assert re.fullmatch(r"step \d+: episode wall budget of 0.5 s exhausted", outcomes[0].message)
        assert 2 <= outcomes[0].n_actions <= 10  # about 9; fewer on a loaded machine

    def test_submission_budget(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import time

            def policy(env, task, rng):
                time.sleep(0.05)
                return 0
        """,
        )
        _, outcomes = self.run(bundle, episodes=EPISODES[:2], submission_seconds=6.0)
        assert outcomes[0].status == "ok"  # 60 steps of 0.05 s
        assert outcomes[1].status == "timeout"
        assert re.fullmatch(r"step \d+: submission wall budget of 6 s exhausted", outcomes[1].message)

    def test_memory_exceeded(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import numpy as np

            def policy(env, task, rng):
                hog = np.ones(4 << 30, dtype=np.uint8)
                return int(hog[0])
        """,
        )
        # A deadline the allocation cannot miss: on these VMs a first touch of memory can run at 200 MB/s under
        # load, and an allocation still below the limit when its deadline passes is a timeout (it was one).
        _, outcomes = self.run(bundle, episodes=EPISODES[:1], memory_bytes=512 * MiB, decision_seconds=10.0)
        assert outcomes[0].status == "memory_exceeded", outcomes[0].message
        assert outcomes[0].message.startswith("step 0: ")
        # Named alike whatever enforces it (issue 30, item 7): the Docker sandbox's cgroup (the out-of-memory
        # killer), the process sandbox's address space (MemoryError).
        assert f"(limit {512 * MiB} bytes)" in outcomes[0].message

    def test_memory_exceeded_at_import(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            import numpy as np

            HOG = np.ones(4 << 30, dtype=np.uint8)

            def policy(env, task, rng):
                return 0
        """,
        )
        _, outcomes = self.run(bundle, episodes=EPISODES[:1], memory_bytes=512 * MiB)
        assert outcomes[0].status == "memory_exceeded", outcomes[0].message
        assert outcomes[0].message.startswith("policy import ran out of memory: ")
        assert f"(limit {512 * MiB} bytes)" in outcomes[0].message

    def test_a_policys_own_memory_error_is_its_exception(self, tmp_path):
        """Review of issue 30, item 10: a policy that raised MemoryError itself, far below the limit, was told that
        it exceeded the memory limit. Raised by the policy's own ``raise``, it is the policy's exception (crash)."""
        bundle = write_policy(
            tmp_path,
            """
            def policy(env, task, rng):
                if env.k == 2:
                    raise MemoryError("my own budget of 10 MB is spent")
                return 0
        """,
        )
        _, outcomes = self.run(bundle, episodes=EPISODES[:1], memory_bytes=512 * MiB)
        outcome = outcomes[0]
        assert outcome.status == "crash", outcome.message
        assert outcome.message.startswith("step 2: policy raised an exception\nTraceback")
        assert outcome.message.endswith("MemoryError: my own budget of 10 MB is spent")

    def test_a_policys_own_memory_error_at_import_is_an_import_error(self, tmp_path):
        bundle = write_policy(
            tmp_path,
            """
            raise MemoryError("the weights do not fit")

            def policy(env, task, rng):
                return 0
        """,
        )
        _, outcomes = self.run(bundle, episodes=EPISODES[:1], memory_bytes=512 * MiB)
        assert outcomes[0].status == "import_error", outcomes[0].message
        assert outcomes[0].message.startswith("policy import failed:\nTraceback")
        assert outcomes[0].message.endswith("MemoryError: the weights do not fit")

    def test_the_harness_cannot_be_killed_from_inside(self, tmp_path):
        """The harness is the first process of its PID namespace: the kernel drops the policy's SIGKILL to it, so a
        policy cannot end its own sandbox (which reviewed main replayed, giving the policy a second look at an
        episode it had seen). The episode goes on; the sandbox stays."""
        bundle = write_policy(tmp_path, KILL_PARENT)
        session, outcomes = self.run(bundle, episodes=EPISODES[:2])
        assert [(o.status, o.message) for o in outcomes] == [("ok", "")] * 2
        assert session.restarts == 0
