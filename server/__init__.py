"""The evaluation service: FastAPI app, storage (SQLAlchemy + Alembic), bundles, queue and leaderboard."""
