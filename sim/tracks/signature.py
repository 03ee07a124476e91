"""A policy's signature against its track's arguments: whether its ``def`` can take them (read from source without
running it), and the track's error messages in the policy's own parameter names.

The server's upload check (``layersched.server.bundles``) and the student's ``layersched validate``
(``layersched.sdk.checks``) apply the one rule, so both refuse the same files; ``validate`` and the sandbox's
evaluation (``layersched.worker.sandbox``) word a refused reply alike, in the names the student wrote.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

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


# What a policy's parameter names may be when they travel from the sandbox (where the policy ran and could have
# forged them) to the worker: identifiers of a bounded length, a bounded number of them. Anything else is dropped.
MAX_PARAMETER_NAMES = 8
MAX_PARAMETER_NAME_CHARS = 64


def parameter_names(policy: Callable[..., Any]) -> tuple[str, ...]:
    """The names of ``policy``'s parameters, in order (empty when it has no signature Python can read)."""
    try:
        names = [p.name for p in inspect.signature(policy).parameters.values()]
    except (TypeError, ValueError):
        return ()
    return checked_parameter_names(names)


def checked_parameter_names(names: object) -> tuple[str, ...]:
    """``names`` if it is a short list of short identifiers, else nothing: the sandbox reports them and the policy
    ran there, so they are read as any other text from the sandbox."""
    if not isinstance(names, (list, tuple)) or len(names) > MAX_PARAMETER_NAMES:
        return ()
    if not all(isinstance(n, str) and n.isidentifier() and len(n) <= MAX_PARAMETER_NAME_CHARS for n in names):
        return ()
    return tuple(names)


def in_own_names(message: str, policy_arguments: str, own: Sequence[str]) -> str:
    """``message`` with the contract's argument names, where it uses them as code (``view.action(c, v)``,
    ``candidates[c]``), in the policy's own ``own`` names (``obs.action(c, v)`` for ``def policy(obs, tasks, rng)``).
    """
    for contract, name in zip(argument_names(policy_arguments), own, strict=False):
        if name != contract:
            message = re.sub(rf"\b{re.escape(contract)}(?=[.\[])", name, message)
    return message
