"""Tries to carry state from one episode to the next through /tmp (and to change what its import left there).

Every episode's actions depend on how many episodes ran before it in this sandbox, as counted in /tmp. With the
scratch directories restored between episodes, every episode sees the count its import left: 0.
"""

MODE = "new-file"  # scratch_modify: "modify"
with open("/tmp/import-state", "w") as handle:
    handle.write("0")


def _count() -> int:
    path = "/tmp/import-state" if MODE == "modify" else "/tmp/episodes-seen"
    try:
        with open(path) as handle:
            return int(handle.read() or 0)
    except FileNotFoundError:
        return 0


def policy(env, task, rng):
    if env.k == 0:  # first decision of an episode: remember that one more episode ran
        seen = _count() + 1
        with open("/tmp/episodes-seen", "w") as handle:
            handle.write(str(seen))
        if MODE == "modify":
            with open("/tmp/import-state", "a") as handle:  # changes what the import left
                handle.write("1")
    feasible = [n for n, ok in enumerate(env.mask(task)) if ok]
    # In steady state the answer depends on what /tmp said at the episode's start.
    with open("/tmp/episodes-seen") as handle:
        seen = int(handle.read())
    return feasible[(env.k + seen) % len(feasible)]
