"""The service's one configuration object, read from ``LAYERSCHED_*`` environment variables (or a ``.env`` file)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything the server, the migrations and the worker's storage calls need to know."""

    model_config = SettingsConfigDict(env_prefix="LAYERSCHED_", env_file=".env", extra="ignore")

    database_url: str = "sqlite:///./var/layersched.db"
    broker_url: str = "redis://127.0.0.1:6379/0"
    bundle_dir: Path = Path("./var/bundles")

    max_bundle_mb: float = Field(50, gt=0, description="largest accepted upload, in MB (10**6 bytes)")
    max_files: int = Field(100, gt=0, description="most members an archive bundle may hold")
    max_unpacked_mb: float = Field(200, gt=0, description="largest total unpacked size of an archive, in MB")
    daily_quota: int = Field(5, ge=0, description="submissions per participant per UTC day")
    max_in_flight: int = Field(2, ge=1, description="queued or running evaluations per participant")
    stuck_timeout_s: float = Field(600, gt=0, description="a running evaluation without heartbeat this long is stuck")
    max_attempts: int = Field(3, ge=1, description="times an evaluation is started before it fails for good")

    evalset_path: Path = Path("hidden_seeds/sample.toml")
    sandbox_backend: Literal["auto", "docker", "process"] = "auto"

    @property
    def max_bundle_bytes(self) -> int:
        return int(self.max_bundle_mb * 1_000_000)

    @property
    def max_unpacked_bytes(self) -> int:
        return int(self.max_unpacked_mb * 1_000_000)


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings; tests call ``get_settings.cache_clear()`` or pass their own to ``create_app``."""
    return Settings()
