"""Imports a module that is not in the sandbox."""

print("importing the policy")
import layersched_no_such_module  # noqa: E402, F401


def policy(env, task, rng):
    return 0
