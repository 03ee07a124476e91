"""The challenge as README's production sequence runs it (issue 29's proof), through the CLI only, on the topology
compose starts: PostgreSQL brought up to date by ``alembic upgrade head``, a private Redis, the API as uvicorn on the
app factory, two ``layersched worker`` processes with temporary directories of their own (two hosts), the Docker
sandbox.

The organiser bootstraps themselves, makes a tiny hidden set per track (``tests/pipeline/sets``), registers them and
both tracks' samples with ``layersched evalset register`` (on the "worker host"), applies a challenge file with a dev
and a final phase per track, adds three students and a team. The students validate and submit kits of both tracks
with four phases open and read ``status``, ``status ID``, ``logs`` and ``leaderboard`` (ranks, phases, "ratio to
SJF/HEFT"), and a student's copy of a baseline scores exactly that baseline's row (the fold of the former
``test_builtin_tracks_e2e.py``). The organiser audits, freezes, publishes and reveals; a student verifies the
commitment; ``challenge export`` then ``apply`` on a fresh server makes the same phases. One stack for the whole
story (the second server is started after the first is down), tiny sets: the test is one of CI's longest, kept cheap.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.pipeline.stack import Stack, production_stack, wait_for

pytestmark = [
    pytest.mark.docker,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.usefixtures("sandbox_image"),
]

SETS = Path(__file__).resolve().parent / "sets"
# A student's copy of one of the track's baselines: its score must be exactly that baseline's row.
COPY_OF_BASELINE = """from layersched.sim.tracks import get_track

_baseline = get_track({track!r}).baseline({baseline!r})


def policy{arguments}:
    return _baseline{arguments}
"""
# Imports what the sandbox does not have (gymnasium is installed for training): validate refuses it.
NEEDS_GYMNASIUM = "import gymnasium\n\n\ndef policy(env, rng):\n    return None\n"


def host(stack: Stack, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``layersched ...`` on the worker host, with the service's settings and no token (bootstrap, register)."""
    return subprocess.run(
        ["layersched", *args], env={**stack.env, **(env or {})}, capture_output=True, text=True, timeout=300
    )


def ok(result: subprocess.CompletedProcess[str], stack: Stack | None = None) -> str:
    logs = "".join(stack.log(n) for n in stack.processes if n.startswith("worker")) if stack else ""
    assert result.returncode == 0, result.stdout + result.stderr + logs[-4000:]
    return result.stdout


def token_of(out: str) -> str:
    return out.rsplit(": ", 1)[1].strip()


def submission_id(out: str) -> int:
    found = re.search(r"^submitted #(\d+) ", out, re.MULTILINE)
    assert found is not None, out
    return int(found.group(1))


def test_a_challenge_runs_on_the_production_topology(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, sandbox_image: str
) -> None:
    cache = tmp_path_factory.getbasetemp() / "production-baselines"
    private = tmp_path / "private"
    cleanups: list[str] = []
    try:
        with production_stack(tmp_path / "first", cache, LAYERSCHED_SANDBOX_IMAGE=sandbox_image) as stack:
            tokens, commitments = _organiser_sets_up(stack, private, cleanups)
            submitted = _students_submit(stack, tokens, tmp_path / "students")
            _students_read_their_standing(stack, tokens, submitted)
            _organiser_ends_the_final(stack, tokens, submitted, private, commitments)
            exported = tmp_path / "exported.toml"
            assert ok(stack.cli(tokens["olga"], "admin", "challenge", "export", "--out", str(exported))) == (
                f"wrote {exported}\n"
            )
            before = json.loads(ok(stack.cli(tokens["olga"], "phases", "--json")))
    finally:
        for own in cleanups:
            shutil.rmtree(own, ignore_errors=True)
    with production_stack(tmp_path / "fresh", cache) as fresh:
        _apply_on_a_fresh_server(fresh, private, exported, before)


def _organiser_sets_up(stack: Stack, private: Path, cleanups: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """README's steps 1-5: bootstrap, hidden sets, registration, workers, the challenge, users and a team; returns
    everyone's token and the hidden sets' commitments."""
    made = ok(host(stack, "admin", "user", "add", "--bootstrap", "--name", "olga", "--email", "olga@example.org",
                   "--role", "organiser"))  # fmt: skip
    tokens = {"olga": token_of(made)}
    commitments = {}
    for name in ("jobs-final", "workflows-final"):
        out = ok(host(stack, "admin", "evalset", "new", "--from", str(SETS / f"{name}.template.toml"), "--out",
                      str(private / f"{name}.toml")))  # fmt: skip
        commitments[name] = out.split("commitment (publish this now, before the challenge): ", 1)[1].split()[0]
    files = [str(private / "jobs-final.toml"), str(private / "workflows-final.toml"), "jobs-sample", "workflows-sample"]
    registered = ok(host(stack, "evalset", "register", *files)).splitlines()
    assert [line.split(" (")[0] for line in registered] == [
        "evaluation set 'jobs-final'", "evaluation set 'workflows-final'", "evaluation set 'jobs-sample'",
        "evaluation set 'workflows-sample'",
    ]  # fmt: skip
    jobs_final = f"(track jobs-v1, commitment {commitments['jobs-final']}, file {private / 'jobs-final.toml'})"
    assert registered[0].startswith(f"evaluation set 'jobs-final' {jobs_final}: registered")
    assert "(track workflows-v1, commitment " in registered[1] and registered[1].endswith("4 baseline rows written")
    again = ok(host(stack, "evalset", "register", *files)).splitlines()
    assert [line.rsplit(": ", 1)[1] for line in again] == ["already registered, unchanged"] * 4
    # Two worker hosts: temporary directories of their own, the same database, broker, bundles and set files. Short
    # ones: a sandbox's channel socket lives there, and a Unix socket's path has at most 107 bytes.
    for name in ("worker-1", "worker-2"):
        own = tempfile.mkdtemp(prefix=f"ls-{name}-")
        stack.start(name, ["layersched", "worker", "--", "--hostname", f"{name}@%h"], TMPDIR=own)
        cleanups.append(own)
    for name in ("worker-1", "worker-2"):
        wait_for(lambda n=name: " ready." in stack.log(n), 120, f"{name} to be ready")

    olga, challenge = tokens["olga"], str(SETS / "challenge.toml")
    planned = ok(stack.cli(olga, "admin", "challenge", "apply", challenge, "--dry-run")).splitlines()
    assert planned[-1].startswith("dry run: nothing changed")
    assert ok(stack.cli(olga, "admin", "challenge", "apply", challenge)).splitlines()[-1] == (
        f"applied {challenge}: 6 changes (in the audit log as apply_challenge)"
    )
    assert ok(stack.cli(olga, "admin", "challenge", "apply", challenge)) == (
        f"nothing to change: the server already matches {challenge}\n"
    )
    phases = json.loads(ok(stack.cli(olga, "phases", "--json")))
    assert [(p["name"], p["track"], p["state"]) for p in phases] == [
        ("dev-jobs", "jobs-v1", "open"), ("final-jobs", "jobs-v1", "open"), ("dev-workflows", "workflows-v1", "open"),
        ("final-workflows", "workflows-v1", "open"),
    ]  # fmt: skip
    for name in ("ada", "bea", "cem"):
        tokens[name] = token_of(ok(stack.cli(olga, "admin", "user", "add", "--name", name, "--email", f"{name}@x.org")))
    ok(stack.cli(olga, "admin", "team", "create", "owls"))
    for name in ("ada", "bea"):
        ok(stack.cli(olga, "admin", "team", "assign", "owls", name))
    return tokens, commitments


def _students_submit(stack: Stack, tokens: dict[str, str], home: Path) -> dict[str, int]:
    """Kits of both tracks, validated and submitted with four phases open; a copy of a baseline on each track; a
    policy the sandbox cannot import. Returns the submissions' ids by what they are."""
    ada, bea, cem = tokens["ada"], tokens["bea"], tokens["cem"]
    assert (
        "(participant, team owls; today: dev-jobs 0/10, final-jobs 0/3, dev-workflows 0/10, final-workflows 0/3)"
        in ok(stack.cli(ada, "login", "--server", stack.api_url, "--token", ada))
    )
    jobs_kit, workflows_kit = home / "jobs", home / "workflows"
    ok(stack.cli(ada, "init", str(jobs_kit), "--track", "jobs-v1"))
    ok(stack.cli(bea, "init", str(workflows_kit), "--track", "workflows-v1"))
    checked = ok(stack.cli(ada, "validate", str(jobs_kit)))
    assert "(ratio to SJF, lower is better)" in checked and checked.rstrip().endswith("ready to submit")
    checked = ok(stack.cli(bea, "validate", str(workflows_kit), "--episodes", "2"))
    assert "(ratio to HEFT, lower is better)" in checked and "of 'workflows-sample'" in checked

    refused = stack.cli(ada, "submit", str(jobs_kit), "--no-wait")  # two phases of the kit's track are open
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: 2 phases of track jobs-v1 are open (dev-jobs, final-jobs): name one, e.g. --phase dev-jobs"
    )
    ids = {}
    out = ok(stack.cli(ada, "submit", str(jobs_kit), "--phase", "final-jobs", "--name", "sjf-kit"), stack)
    ids["ada"] = submission_id(out)
    assert re.search(r"succeeded: score [0-9.]+ \(95% CI [0-9.-]+, ratio to SJF, lower is better\), rank 1$", out, re.M)
    out = ok(stack.cli(bea, "submit", str(workflows_kit), "--phase", "final-workflows", "--name", "eft-kit"), stack)
    ids["bea"] = submission_id(out)
    assert "ratio to HEFT, lower is better), rank " in out

    for track, baseline, arguments, phase in (
        ("jobs-v1", "Tetris*", "(env, rng)", "dev-jobs"),
        ("workflows-v1", "MinMin", "(view, candidates, rng)", "final-workflows"),
    ):
        copy = home / f"copy-{baseline.strip('*').lower()}.py"
        copy.write_text(COPY_OF_BASELINE.format(track=track, baseline=baseline, arguments=arguments))
        out = ok(stack.cli(cem, "submit", str(copy), "--phase", phase, "--name", f"my-{baseline}"), stack)
        ids[baseline] = submission_id(out)
        board = json.loads(ok(stack.cli(cem, "leaderboard", "--phase", phase, "--json")))
        rows = {row["participant"]: row for row in board["rows"]}
        assert rows["cem"]["score"] == pytest.approx(rows[baseline]["score"], abs=1e-12), (baseline, rows)

    broken = home / "broken.py"
    broken.write_text(NEEDS_GYMNASIUM)
    checked_broken = stack.cli(cem, "validate", str(broken), "--static", "--evalset", "jobs-sample")
    assert checked_broken.returncode == 1
    assert "  FAIL  broken.py:1: imports 'gymnasium', which the sandbox does not have" in checked_broken.stdout
    failed = stack.cli(cem, "submit", str(broken), "--phase", "dev-jobs", "--skip-checks", "--name", "broken")
    assert failed.returncode == 1 and ": import_error: " in failed.stdout, failed.stdout + failed.stderr
    ids["broken"] = submission_id(failed.stdout)
    return ids


def _students_read_their_standing(stack: Stack, tokens: dict[str, str], ids: dict[str, int]) -> None:
    """status, status ID, logs and leaderboard: each submission on its own phase, with its track's reference."""
    ada, cem = tokens["ada"], tokens["cem"]
    out = ok(stack.cli(ada, "status"))  # ada's and her teammate bea's
    header, *rows, ratios = out.splitlines()
    assert header.split()[:4] == ["id", "name", "phase", "state"]
    assert [r.split()[:4] for r in rows] == [
        [f"#{ids['bea']}", "eft-kit", "final-workflows", "succeeded"],
        [f"#{ids['ada']}", "sjf-kit", "final-jobs", "succeeded"],
    ]
    assert ratios.startswith("score: ratio to the phase's reference baseline (final-jobs: SJF, final-workflows: HEFT)")
    out = ok(stack.cli(ada, "status", str(ids["bea"])))
    assert out.splitlines()[0].endswith(", phase final-workflows")
    assert "ratio to HEFT, lower is better), rank " in out and "sandbox docker" in out
    out = ok(stack.cli(ada, "logs", str(ids["ada"])))
    assert out.splitlines()[0] == f"#{ids['ada']} 'sjf-kit', phase final-jobs:"
    assert "ratio to SJF, lower is better), rank 1" in out.splitlines()[1]
    assert re.search(r"^paper-0.7/pub000: ok$", out, re.M)
    board = ok(stack.cli(cem, "leaderboard", "--phase", "final-workflows")).splitlines()
    assert board[0] == "phase final-workflows: public leaderboard: score = ratio to HEFT, lower is better"
    ranked = [line.split()[:3] for line in board[2:] if line.split()[0].isdigit()]
    assert sorted(r[1] for r in ranked) == ["cem", "owls"] and [r[0] for r in ranked] == ["1", "2"]
    assert any(line.split()[1:4] == ["owls", "(ada,", "bea)"] for line in board[2:])
    # The failed submission's page: the traceback once, in a <pre>, from the policy's own frames.
    with httpx.Client(base_url=stack.api_url) as browser:
        signed = browser.post("/signin", data={"token": cem, "next": f"/submissions/{ids['broken']}"},
                              follow_redirects=True)  # fmt: skip
    assert signed.status_code == 200
    assert signed.text.count("Traceback (most recent call last)") == 1
    shown = re.search(r'<pre id="traceback">(.*?)</pre>', signed.text, re.S)
    assert shown is not None
    lines = html.unescape(shown.group(1)).splitlines()
    assert lines[-1] == "ModuleNotFoundError: No module named 'gymnasium'"
    assert all("/bundle/" in line for line in lines if line.startswith("  File "))
    _schedules_are_drawn_of_public_episodes_only(stack, tokens, ids)


def _schedules_are_drawn_of_public_episodes_only(stack: Stack, tokens: dict[str, str], ids: dict[str, int]) -> None:
    """Issue 33 on the production topology: the dev phase's episodes are the sample's, seeded: the worker kept their
    actions and each replays on the API beside SJF's (drawn only if the replay reproduces the recorded trace); the
    final phase's are keyed: none is listed or drawn, to its owner or anyone."""
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {tokens['cem']}"}) as cem:
        page = cem.get(f"/submissions/{ids['Tetris*']}").text
        links = re.findall(rf'href="(/submissions/{ids["Tetris*"]}/episodes/[^"]+)"', page)
        assert len(links) == 15, page  # jobs-sample: 3 scenarios x 5 seeded episodes, both splits
        replay = cem.get(links[0], timeout=30)
        assert replay.status_code == 200 and 'data-panel="SJF"' in replay.text and "<script" not in replay.text
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {tokens['ada']}"}) as ada:
        keyed = ada.get(f"/submissions/{ids['ada']}").text
        assert 'id="episode-table"' not in keyed
        hidden = ada.get(f"/submissions/{ids['ada']}/episodes/paper-0.7/pub000")
        assert hidden.status_code == 404 and "no schedule is kept for this episode" in hidden.text


def _organiser_ends_the_final(
    stack: Stack, tokens: dict[str, str], ids: dict[str, int], private: Path, commitments: dict[str, str]
) -> None:
    olga = tokens["olga"]
    audit = ok(stack.cli(olga, "admin", "audit", str(ids["ada"])), stack)
    assert ": match" in audit
    refused = stack.cli(olga, "admin", "evalset", "reveal", "jobs-final", "--yes")  # final-jobs still open
    assert refused.returncode == 1 and "is the set of phase final-jobs, open and not published" in refused.stderr
    ok(stack.cli(olga, "admin", "freeze", "--phase", "final-jobs"))
    assert ok(stack.cli(olga, "admin", "publish", "--phase", "final-jobs", "--yes")) == (
        "private leaderboard of phase final-jobs published\n"
    )
    phases = {p["name"]: p["state"] for p in json.loads(ok(stack.cli(tokens["ada"], "phases", "--json")))}
    assert phases["final-jobs"] == "published"
    private_board = ok(stack.cli(tokens["ada"], "leaderboard", "--phase", "final-jobs", "--split", "private"))
    assert private_board.splitlines()[0] == (
        "phase final-jobs: private leaderboard (frozen, published): score = ratio to SJF, lower is better"
    )
    ok(stack.cli(olga, "admin", "evalset", "reveal", "jobs-final", "--yes"))
    verified = ok(
        stack.cli(tokens["cem"], "evalset", "verify", str(private / "jobs-final.toml"), commitments["jobs-final"])
    )
    assert verified == f"{private / 'jobs-final.toml'}: matches commitment {commitments['jobs-final']}\n"


def _apply_on_a_fresh_server(fresh: Stack, private: Path, exported: Path, before: list[dict[str, Any]]) -> None:
    """Next term: a new server with the same sets registered makes this term's phases from the exported file."""
    olga = token_of(ok(host(fresh, "admin", "user", "add", "--bootstrap", "--name", "olga", "--email", "o@x.org",
                            "--role", "organiser")))  # fmt: skip
    files = [str(private / "jobs-final.toml"), str(private / "workflows-final.toml"), "jobs-sample", "workflows-sample"]
    ok(host(fresh, "evalset", "register", *files))
    applied = ok(fresh.cli(olga, "admin", "challenge", "apply", str(exported)))
    assert applied.splitlines()[-1] == f"applied {exported}: 6 changes (in the audit log as apply_challenge)"
    after = json.loads(ok(fresh.cli(olga, "phases", "--json")))
    fields = ("name", "title", "evalset", "track", "opens_at", "closes_at", "daily_quota", "visibility")
    assert [{k: p[k] for k in fields} for p in after] == [{k: p[k] for k in fields} for p in before]
