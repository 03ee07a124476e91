import sys

from layersched.worker.service import run_worker

run_worker(sys.argv[1:])
