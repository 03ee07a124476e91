# Sourced by the scripts: the project's virtual environment, .venv/ in this checkout. Everything the scripts install
# goes there, never into the machine's Python, so two clones on one machine never re-point each other's `layersched`
# command or editable install. After sourcing, `python`, `layersched`, `pytest`, `ruff` and `mypy` are the venv's.
LAYERSCHED_VENV="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv"
export VIRTUAL_ENV="$LAYERSCHED_VENV"
export PATH="$LAYERSCHED_VENV/bin:$PATH"
