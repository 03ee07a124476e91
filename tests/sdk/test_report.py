"""The schedule pages on a student's own machine (issue 33): ``layersched validate . --report DIR`` writes the
server's pages as static files for every episode of a sample, and ``layersched replay`` draws one episode to an
HTML or SVG file, beside the reference baseline or another of the student's policies."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from layersched.sdk.cli import main
from layersched.sim.evalset import evalset_file, load_evalset
from layersched.sim.tracks import get_track
from tests.sim.schedule_svg import NS, bars

RANDOM_POLICY = """from layersched.sim.tracks import get_track

_random = get_track("jobs-v1").baseline("Random")


def policy(env, rng):
    return _random(env, rng)
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The jobs-v1 kit as `layersched init` copies it (its template is SJF), and a Random policy beside it."""
    root = tmp_path_factory.mktemp("kits")
    assert main(["init", str(root / "sjf"), "--track", "jobs-v1"]) == 0
    (root / "random").mkdir()
    (root / "random" / "policy.py").write_text(RANDOM_POLICY)
    return root


def test_validate_writes_every_sample_episodes_pages(
    kit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    assert main(["validate", str(kit / "random"), "--evalset", "jobs-sample", "--report", str(out)]) == 0
    printed = capsys.readouterr().out
    evalset = load_evalset(evalset_file("jobs-sample"))
    episodes = evalset.jobs()
    assert f"wrote {out / 'index.html'} ({len(episodes)} episode pages)" in printed
    index = (out / "index.html").read_text()
    assert "<script" not in index and not re.search(r'(?:href|src)="(?:https?:)?//', index), "loads nothing"
    links = re.findall(r'href="(episodes/[^"]+)"', index)
    assert len(links) == len(episodes), "every episode of the sample, private split included"
    assert re.search(r"won \d+</strong>, <strong>lost \d+</strong>", index)
    # The score printed is the public split's alone, as before --report.
    capsys.readouterr()
    assert main(["validate", str(kit / "random"), "--evalset", "jobs-sample"]) == 0
    plain = capsys.readouterr().out
    assert _your_score(plain) == _your_score(printed)
    public = sum(job.episode.split == "public" for job in episodes)
    assert f"score on {public} public episodes of 'jobs-sample'" in printed and public < len(episodes)
    track = get_track("jobs-v1")
    for link in links:
        page = (out / link).read_text()
        assert "<script" not in page and 'href="../index.html#episode-table"' in page
        for figure in re.findall(r"(<svg.*?</svg>)", page, re.S):
            ET.fromstring(figure)  # each figure is well-formed SVG
        jobs = re.search(r'id="fig-jobs">.*?(<svg.*?</svg>)', page, re.S)
        assert jobs is not None and {b.panel for b in bars(jobs.group(1))} == {"your policy", track.reference_baseline}


def _your_score(printed: str) -> str:
    found = re.search(r"->your policy\s+([0-9.]+)", printed)
    assert found, printed
    return found.group(1)


def test_replay_draws_one_episode_beside_the_reference_or_another_policy(
    kit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "one.html"
    args = ["replay", str(kit / "random"), "--evalset", "jobs-sample", "--episode", "heavy-1.0/seed1"]
    assert main([*args, "-o", str(page)]) == 0
    assert re.search(
        r"heavy-1.0/seed1: mean_slowdown [0-9.]+ vs SJF's [0-9.]+ \(ratio [0-9.]+\)", capsys.readouterr().out
    )
    html = page.read_text()
    assert html.count("<svg") == 4 and "<script" not in html and 'data-panel="random"' in html
    svg = tmp_path / "diff.svg"
    assert main([*args, "--against", str(kit / "sjf"), "-o", str(svg)]) == 0
    root = ET.fromstring(svg.read_text())
    charts = root.findall(f"{NS}svg")
    assert len(charts) == 4 and [float(c.get("y", "0")) for c in charts] == sorted(
        float(c.get("y", "0")) for c in charts
    )
    panels = {g.get("data-panel") for g in root.iter(f"{NS}g") if g.get("class") == "panel"}
    assert panels == {"random", "sjf"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--episode", "heavy-1.0/seed9"], "error: no episode 'heavy-1.0/seed9' in evaluation set 'jobs-sample'"),
        (["-o", "x.png"], "error: --output must end in .html or .svg, got 'x.png'"),
    ],
    ids=["unknown-episode", "bad-suffix"],
)
def test_replay_refuses_naming_the_value(
    kit: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["replay", str(kit / "random"), "--evalset", "jobs-sample", *extra]) == 1
    assert message in capsys.readouterr().err


def test_replay_of_a_keyed_episode_or_a_broken_policy_says_why(
    kit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keyed = tmp_path / "keyed.toml"
    keyed.write_text(
        'format = "layersched-evalset"\nversion = 1\nname = "keyed"\ntrack = "jobs-v1"\n\n[[scenario]]\n'
        f'name = "s"\nweight = 1.0\nepisodes = [{{ id = "k", key = "{"ab" * 32}" }}]\n'
    )
    assert main(["replay", str(kit / "random"), "--evalset", str(keyed)]) == 1
    assert (
        "error: episode s/k is keyed: only seeded episodes are drawn (organisers, on a host" in capsys.readouterr().err
    )
    drawn = tmp_path / "keyed.html"
    assert main(["replay", str(kit / "random"), "--evalset", str(keyed), "--keyed", "-o", str(drawn)]) == 0
    assert "a keyed episode: keep it private" in drawn.read_text() and drawn.read_text().count("<svg") == 4
    broken = tmp_path / "broken.py"
    broken.write_text("def policy(env, rng):\n    return 'slot one'\n")
    assert main(["replay", str(broken), "--evalset", "jobs-sample"]) == 1
    err = capsys.readouterr().err
    assert f"error: {broken} did not finish the episode: " in err and "'slot one'" in err
