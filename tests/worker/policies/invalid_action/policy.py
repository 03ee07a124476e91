"""Returns a node index one past the last node at step 5."""


def policy(env, task, rng):
    return env.n_nodes if env.k == 5 else 0
