"""Fixtures of the red-team tests: the real app on a fresh PostgreSQL database (tables emptied per test), and a
snapshot of everything the service could have written (bundle folder and every table) to prove a refusal wrote nothing.

The server tests' fixtures are reused (imported here so pytest registers them); ``database_url`` is narrowed to
PostgreSQL, the backend of the deployment.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from layersched.server.config import Settings
from layersched.server.db import make_engine
from layersched.server.models import Base
from tests.server.conftest import (  # noqa: F401 - fixtures, registered by being imported
    BROKER,
    _empty,
    alice,
    bob,
    client,
    db,
    enqueued,
    evalset,
    make_account,
    organiser,
    postgres_database,
)


@pytest.fixture
def database_url(postgres_database: str) -> Iterator[str]:  # noqa: F811 - narrows the server tests' fixture
    engine = make_engine(postgres_database)
    _empty(engine)
    engine.dispose()
    yield postgres_database


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """The server tests' limits; the bundle folder is created up front so its permissions can be snapshotted."""
    bundle_dir = tmp_path / "bundles"
    bundle_dir.mkdir()
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=database_url,
        broker_url=BROKER,
        bundle_dir=bundle_dir,
        max_bundle_mb=0.05,
        max_files=10,
        max_unpacked_mb=0.2,
        daily_quota=3,
        max_in_flight=2,
    )


def snapshot(settings: Settings) -> dict[str, Any]:
    """Every file under the bundle folder (with size) and the row count of every table."""
    files = {
        str(path.relative_to(settings.bundle_dir)): path.stat().st_size
        for path in sorted(settings.bundle_dir.rglob("*"))
    }
    engine = make_engine(settings.database_url)
    with engine.connect() as conn:
        rows = {
            table.name: conn.scalar(select(func.count()).select_from(table)) for table in Base.metadata.sorted_tables
        }
    engine.dispose()
    return {"files": files, "rows": rows}


@pytest.fixture
def unchanged(settings: Settings) -> Iterator[None]:
    """Asserts, after the test, that the bundle folder and the database are as they were before it."""
    before = snapshot(settings)
    yield
    assert snapshot(settings) == before
