"""``python -m layersched.worker [--no-banner] [celery worker options]``: one worker process (see ``service``)."""

import sys

from layersched.worker.service import run_worker

argv = sys.argv[1:]
banner = "--no-banner" not in argv
run_worker([a for a in argv if a != "--no-banner"], banner=banner)
