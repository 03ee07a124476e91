"""Whether a policy's ``def`` can take its track's arguments, read from source without running it.

The server's upload check (``layersched.server.bundles``) and the student's ``layersched validate``
(``layersched.sdk.checks``) apply this one rule, so both refuse the same files.
"""

from __future__ import annotations

import ast
import re

_ARGUMENTS = re.compile(r"\(\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*\)")


def argument_names(policy_arguments: str) -> tuple[str, ...]:
    """``"(env, task, rng)"`` -> ``("env", "task", "rng")`` (a track's ``policy_arguments``)."""
    match = _ARGUMENTS.fullmatch(policy_arguments.strip())
    if match is None:
        raise ValueError(f"policy_arguments must look like '(env, task, rng)', got {policy_arguments!r}")
    return tuple(name.strip() for name in match.group(1).split(","))


def signature_problem(node: ast.FunctionDef, policy_arguments: str) -> str | None:
    """Why ``def policy(...)`` cannot be called with the track's positional arguments, or None if it can.

    It can when it takes at least that many positionally (or ``*args``), requires no more, and has no keyword-only
    parameter without a default.
    """
    wanted = argument_names(policy_arguments)
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    kw_required = any(default is None for default in args.kw_defaults)
    if (len(positional) >= len(wanted) or args.vararg is not None) and required <= len(wanted) and not kw_required:
        return None
    shown = ", ".join(a.arg for a in [*positional, *args.kwonlyargs])
    count = {1: "one", 2: "two", 3: "three", 4: "four"}.get(len(wanted), str(len(wanted)))
    plural = "argument" if len(wanted) == 1 else "arguments"
    return f"policy({shown}) must accept {count} positional {plural} {policy_arguments}"
