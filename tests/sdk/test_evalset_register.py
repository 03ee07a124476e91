"""``layersched evalset register`` (issue 29, item 1): sets registered where their keys are, idempotent, a changed
file under a registered name refused with both commitments, nothing written on any refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sdk.conftest import needs_server
from tests.sdk.test_cli import error_line, run

pytestmark = needs_server

SAMPLE_COMMITMENT = "4eea9854e880b370ee76f9e2a453bfcc817417738adc157f89ebe8010e85f01d"


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, baseline_cache: Path) -> Iterator[str]:
    """A migrated SQLite database named by LAYERSCHED_DATABASE_URL, as on a worker host."""
    from layersched.server.admin import upgrade_database
    from layersched.server.config import Settings, get_settings

    url = f"sqlite:///{tmp_path / 'layersched.db'}"
    monkeypatch.setenv("LAYERSCHED_DATABASE_URL", url)
    monkeypatch.setenv("LAYERSCHED_BASELINE_CACHE_DIR", str(baseline_cache))
    upgrade_database(settings=Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
    get_settings.cache_clear()
    yield url
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def baseline_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("baselines")


def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    import sqlalchemy

    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(sqlalchemy.text(sql))]
    finally:
        engine.dispose()


def test_register_prints_each_set_and_the_same_files_again_change_nothing(
    capsys: pytest.CaptureFixture[str], database: str
) -> None:
    from layersched.sim.evalset import evalset_file, load_evalset

    jobs = load_evalset(evalset_file("jobs-sample"))
    code, out, err = run(capsys, "evalset", "register", "sample", "jobs-sample")
    assert code == 0, err
    assert out.splitlines() == [
        f"evaluation set 'sample' (track layers-v1, commitment {SAMPLE_COMMITMENT}, file "
        f"{evalset_file('sample').resolve()}): registered; 6 baseline rows written",
        f"evaluation set 'jobs-sample' (track jobs-v1, commitment {jobs.commitment}, file "
        f"{evalset_file('jobs-sample').resolve()}): registered; 4 baseline rows written",
    ]
    assert err.splitlines()[0] == f"layersched: database {database}"
    rows = _rows(database, "SELECT name, track, current FROM evalsets ORDER BY id")
    assert rows == [("sample", "layers-v1", 0), ("jobs-sample", "jobs-v1", 0)]
    # Not current: no default phase is made (a challenge file names the phases).
    assert _rows(database, "SELECT name FROM phases") == []
    before = _rows(database, "SELECT baseline, created_at FROM baseline_results ORDER BY id")
    log = _rows(database, "SELECT action, target FROM audit_log ORDER BY id")
    assert log == [("register_evalset", "evalset:sample"), ("register_evalset", "evalset:jobs-sample")]

    code, out, _ = run(capsys, "evalset", "register", "jobs-sample", "sample")
    assert code == 0
    assert [line.split(": ")[-1] for line in out.splitlines()] == ["already registered, unchanged"] * 2
    assert _rows(database, "SELECT baseline, created_at FROM baseline_results ORDER BY id") == before
    assert _rows(database, "SELECT action, target FROM audit_log ORDER BY id") == log


def test_a_changed_file_under_a_registered_name_is_refused_with_both_commitments(
    capsys: pytest.CaptureFixture[str], database: str, tmp_path: Path
) -> None:
    from layersched.sim.evalset import evalset_file, load_evalset

    assert run(capsys, "evalset", "register", "jobs-sample")[0] == 0
    changed = tmp_path / "jobs-sample.toml"
    changed.write_text(evalset_file("jobs-sample").read_text().replace("weight = 1.0", "weight = 2.0", 1))
    new = load_evalset(changed).commitment
    registered = load_evalset(evalset_file("jobs-sample")).commitment
    fresh = tmp_path / "other.toml"
    fresh.write_text(evalset_file("workflows-sample").read_text().replace('name = "workflows-sample"', 'name = "o"'))
    code, out, err = run(capsys, "evalset", "register", str(fresh), str(changed))
    assert code == 1 and out == ""
    assert error_line(err) == (
        f"error: evaluation set 'jobs-sample' is registered with commitment {registered}, but {changed} has "
        f"commitment {new}: a registered set never changes (its commitment is published and its phases' "
        "submissions were scored on it); register the new file under another name (`name = ...` in it, or admin "
        "evalset new --name); nothing was registered"
    )
    # The other file, named first and fine on its own, was not registered either: a refusal changes nothing.
    assert _rows(database, "SELECT name, commitment FROM evalsets") == [("jobs-sample", registered)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sample", "sample"], "are both evaluation set 'sample'"),
        (["no-such-set"], "error: no evaluation set 'no-such-set': not a file, and not a built-in set"),
        (["sample", "jobs-sample", "--current"], "error: only one set can be current, got 2 files"),
    ],
    ids=["overlapping-names", "missing-file", "two-current"],
)
def test_bad_input_is_one_line_and_registers_nothing(
    capsys: pytest.CaptureFixture[str], database: str, args: list[str], message: str
) -> None:
    code, _, err = run(capsys, "evalset", "register", *args)
    assert code == 1
    assert message in error_line(err)
    assert _rows(database, "SELECT name FROM evalsets") == []


def test_a_database_without_its_schema_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layersched.server.config import get_settings

    monkeypatch.setenv("LAYERSCHED_DATABASE_URL", f"sqlite:///{tmp_path / 'empty.db'}")
    get_settings.cache_clear()
    try:
        code, _, err = run(capsys, "evalset", "register", "sample")
    finally:
        get_settings.cache_clear()
    assert code == 1
    line = error_line(err)
    assert line.startswith(f"error: the database sqlite:///{tmp_path / 'empty.db'} refused the registration (")
    assert line.endswith("is its schema up to date (alembic upgrade head, or compose's migrate step)?")


def test_current_makes_the_default_phase(capsys: pytest.CaptureFixture[str], database: str) -> None:
    code, out, _ = run(capsys, "evalset", "register", "sample", "--current")
    assert code == 0 and out.rstrip().endswith("registered; 6 baseline rows written")
    assert _rows(database, "SELECT name FROM phases") == [("main",)]
