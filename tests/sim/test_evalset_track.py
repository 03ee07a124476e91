"""An evaluation set names its track (issue 17): parsing the id, the commitment, dumping."""

from __future__ import annotations

from pathlib import Path

import pytest

from layersched.sim.errors import EvalSetError
from layersched.sim.evalset import SAMPLE_PATH, EvalSet, dump_evalset, load_evalset
from layersched.sim.tracks import DEFAULT_TRACK_ID

# The sample's commitment as published before tracks existed (hidden_seeds/README.md).
SAMPLE_COMMITMENT = "4eea9854e880b370ee76f9e2a453bfcc817417738adc157f89ebe8010e85f01d"


def sample_with(line: str) -> str:
    text = SAMPLE_PATH.read_text(encoding="utf-8")
    assert 'name = "sample"\n' in text
    return text.replace('name = "sample"\n', f'name = "sample"\n{line}\n', 1)


def write(tmp_path: Path, text: str, name: str = "set.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_set_without_a_track_is_the_default_track() -> None:
    es = load_evalset(SAMPLE_PATH)
    assert es.track == DEFAULT_TRACK_ID == "layers-v1"
    assert es.commitment == SAMPLE_COMMITMENT
    assert "track" not in es.canonical()


def test_naming_the_default_track_keeps_the_commitment(tmp_path: Path) -> None:
    es = load_evalset(write(tmp_path, sample_with('track = "layers-v1"')))
    assert es.track == "layers-v1"
    assert es.commitment == SAMPLE_COMMITMENT
    assert es.canonical() == load_evalset(SAMPLE_PATH).canonical()
    dumped = dump_evalset(es)
    assert "track" not in dumped  # absent means the default, as in the canonical form
    again = load_evalset(write(tmp_path, dumped, "again.toml"))
    assert (again.track, again.commitment) == ("layers-v1", SAMPLE_COMMITMENT)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('track = "layers-v2"', "unknown track 'layers-v2'; known tracks: layers-v1"),
        ('track = "Layers"', "unknown track 'Layers'; known tracks: layers-v1"),
        ("track = 1", "track must be a track id such as 'layers-v1', got 1"),
    ],
    ids=["unknown", "malformed", "not-a-string"],
)
def test_an_unknown_track_is_named_with_the_known_ones(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, sample_with(line))
    with pytest.raises(EvalSetError) as exc:
        load_evalset(path)
    assert str(exc.value) == f"{path}: {message}"


def test_a_set_built_in_code_checks_its_track() -> None:
    es = load_evalset(SAMPLE_PATH)
    with pytest.raises(EvalSetError) as exc:
        EvalSet("other", es.scenarios, track="nope-v1")
    assert str(exc.value) == "unknown track 'nope-v1'; known tracks: layers-v1"
