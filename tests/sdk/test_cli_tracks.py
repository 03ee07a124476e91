"""The CLI on a server of several tracks and phases (issue 29, item 3): a kit knows its track, and a submission's
phase decides its rank, board and "ratio to" text in submit, status, logs and select."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sdk.conftest import SCENARIOS, LiveServer, Worker
from tests.sdk.test_cli import error_line, login, run


@pytest.fixture
def jobs_phases(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> LiveServer:
    """Beside ``main`` (layers-v1, on sample): ``dev-jobs`` and ``final-jobs`` on two jobs-v1 sets, all open."""
    from layersched.server.admin import register_evalset

    for name in ("jobs-dev", "jobs-final"):
        register_evalset(
            name=name, commitment=name[-1] * 64, path=f"{name}.toml", scenarios=SCENARIOS, track="jobs-v1",
            current=False, settings=live_server.settings,
        )  # fmt: skip
    login(capsys, live_server, "olga")
    for phase, evalset in (("dev-jobs", "jobs-dev"), ("final-jobs", "jobs-final")):
        assert run(capsys, "admin", "phase", "create", phase, "--evalset", evalset)[0] == 0
    return live_server


@pytest.fixture
def jobs_kit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    kit = tmp_path / "jobs"
    assert run(capsys, "init", str(kit), "--track", "jobs-v1")[0] == 0
    return kit


def test_a_kit_goes_to_the_open_phase_of_its_track_and_reads_as_ratios_to_its_reference(
    capsys: pytest.CaptureFixture[str],
    jobs_phases: LiveServer,
    worker_thread: Worker,
    jobs_kit: Path,
    policy_file: Path,
) -> None:
    login(capsys, jobs_phases, "alice")
    code, out, _ = run(capsys, "login", "--server", jobs_phases.url, "--token", jobs_phases.tokens["alice"])
    assert "(participant; today: main 0/2, dev-jobs 0/2, final-jobs 0/2)" in out
    code, _, err = run(capsys, "submit", str(jobs_kit), "--no-wait")
    assert code == 1
    assert error_line(err) == (
        "error: 2 phases of track jobs-v1 are open (dev-jobs, final-jobs): name one, e.g. --phase dev-jobs"
    )

    login(capsys, jobs_phases, "olga")
    assert run(capsys, "admin", "phase", "close", "dev-jobs")[0] == 0
    login(capsys, jobs_phases, "alice")
    code, out, err = run(capsys, "submit", str(jobs_kit), "--name", "sjf", "--poll", "0.1")
    assert code == 0, err
    assert _outcome(out, 1).startswith("#1 succeeded: score 0.9800 (95% CI 0.9500-1.0100, ratio to SJF, lower")
    # A lab policy beside it, with three phases open: --phase names it, and its score is a ratio to Greedy.
    code, out, err = run(capsys, "submit", str(policy_file), "--phase", "main", "--poll", "0.1")
    assert code == 0, err
    assert "ratio to Greedy, lower is better), rank 1" in _outcome(out, 2)

    code, out, _ = run(capsys, "status")
    _header, *rows, ratios = out.splitlines()
    assert [r.split()[:3] for r in rows] == [["#2", "first_fit", "main"], ["#1", "sjf", "final-jobs"]]
    assert ratios == (
        "score: ratio to the phase's reference baseline (final-jobs: SJF, main: Greedy), lower is better; "
        "rank: on its board"
    )
    code, out, _ = run(capsys, "status", "--phase", "final-jobs")
    assert [line.split()[0] for line in out.splitlines()[1:-1]] == ["#1"]
    code, out, _ = run(capsys, "status", "1")
    assert out.splitlines()[0].endswith(", phase final-jobs")
    assert "ratio to SJF, lower is better), rank 1\n" in out
    code, out, _ = run(capsys, "logs", "1")
    assert out.splitlines()[:2] == [
        "#1 'sjf', phase final-jobs:",
        "#1 succeeded: score 0.9800 (95% CI 0.9500-1.0100, ratio to SJF, lower is better), rank 1",
    ]
    code, out, _ = run(capsys, "select", "1")
    assert out == "selected #1 'sjf' for the final ranking of phase final-jobs (your selection there: #1)\n"
    code, out, _ = run(capsys, "leaderboard", "--phase", "final-jobs")
    assert out.splitlines()[0] == "phase final-jobs: public leaderboard: score = ratio to SJF, lower is better"


def test_a_kit_for_another_track_than_the_phase_is_refused_naming_both(
    capsys: pytest.CaptureFixture[str], jobs_phases: LiveServer, jobs_kit: Path
) -> None:
    login(capsys, jobs_phases, "alice")
    code, _, err = run(capsys, "submit", str(jobs_kit), "--phase", "main", "--no-wait")
    assert code == 1
    assert error_line(err) == (
        f"error: the kit is for track jobs-v1 ({jobs_kit / 'layersched-kit.toml'}), but phase 'main' runs track "
        "layers-v1: submit it to a phase of jobs-v1 (layersched phases), or make a kit of layers-v1 (layersched "
        "init DIR --track layers-v1)"
    )
    assert "upload [" not in err


def test_a_kit_for_a_track_the_server_does_not_run(
    capsys: pytest.CaptureFixture[str], jobs_phases: LiveServer, tmp_path: Path
) -> None:
    kit = tmp_path / "wf"
    assert run(capsys, "init", str(kit), "--track", "workflows-v1")[0] == 0
    login(capsys, jobs_phases, "alice")
    code, _, err = run(capsys, "submit", str(kit), "--no-wait")
    assert code == 1
    assert error_line(err) == (
        f"error: the server runs no phase of track workflows-v1, the kit's ({kit / 'layersched-kit.toml'}); its "
        "phases: main (layers-v1), dev-jobs (jobs-v1), final-jobs (jobs-v1)"
    )


def test_no_open_phase_of_the_kits_track(
    capsys: pytest.CaptureFixture[str], jobs_phases: LiveServer, jobs_kit: Path
) -> None:
    login(capsys, jobs_phases, "olga")
    assert run(capsys, "admin", "phase", "close", "dev-jobs")[0] == 0
    assert run(capsys, "admin", "publish", "--phase", "final-jobs", "--yes")[0] == 0
    login(capsys, jobs_phases, "alice")
    code, _, err = run(capsys, "submit", str(jobs_kit), "--no-wait")
    assert code == 1
    assert error_line(err) == (
        "error: no phase of track jobs-v1 is open now (its phases: dev-jobs (closed), final-jobs (published)); "
        "see layersched phases"
    )
    code, out, _ = run(capsys, "phases")
    assert [line.split()[-1] for line in out.splitlines()[1:]] == ["open", "closed", "published"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('track = "packing-v9"\n', "unknown track 'packing-v9'; known tracks: "),
        ('track = "jobs-v1"\nseed = 3\n', "unknown key 'seed'; the kit file holds only track = \"TRACK-ID\""),
        ("track = jobs-v1\n", "is not valid TOML"),
        ("track = 1\n", 'track must be a track id such as track = "jobs-v1", got 1'),
    ],
    ids=["unknown-track", "unknown-key", "not-toml", "not-a-string"],
)
def test_a_bad_kit_file_is_one_line_for_validate_and_submit(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, jobs_kit: Path, text: str, message: str
) -> None:
    (jobs_kit / "layersched-kit.toml").write_text(text)
    login(capsys, live_server, "alice")
    for command in (["validate", str(jobs_kit), "--static"], ["submit", str(jobs_kit), "--no-wait"]):
        code, _, err = run(capsys, *command)
        assert code == 1
        line = error_line(err)
        assert line.startswith(f"error: {jobs_kit / 'layersched-kit.toml'}") and message in line, line
    assert live_server.worker.calls == []


def test_validate_of_a_kit_refuses_a_set_of_another_track(capsys: pytest.CaptureFixture[str], jobs_kit: Path) -> None:
    code, _, err = run(capsys, "validate", str(jobs_kit), "--evalset", "sample", "--static")
    assert code == 1
    assert error_line(err) == (
        f"error: --evalset sample is a set of track layers-v1, but the kit is for track jobs-v1 "
        f"({jobs_kit / 'layersched-kit.toml'})"
    )


def _outcome(out: str, submission_id: int) -> str:
    """The line of ``submit``'s output that tells how submission ``submission_id`` ended (after the lines of its
    upload, its place in the queue and its page)."""
    (line,) = [line for line in out.splitlines() if line.startswith(f"#{submission_id} ")]
    return line
