"""The sandbox: everything that runs a participant's policy in isolation, apart from the Celery pipeline around it.

Trusted side: ``runner`` (sessions and episodes), the backends (``docker_backend``, ``process_backend``, their
``backend`` protocol), ``pool`` (warm containers), ``choice`` (which backend, said in plain words), ``limits`` and
``run_dirs``. Inside the sandbox: ``harness`` (the supervisor), ``episode_process`` (one episode's policy process),
``capture`` and ``cache_guard``. Both sides: ``protocol`` (framing) and ``wire`` (what the frames hold). The image's
build scripts (``build_image.sh``, ``start_dockerd.sh``, ``Dockerfile``) live here too.
"""
