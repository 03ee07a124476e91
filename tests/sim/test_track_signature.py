"""The policy-signature rule the upload and validate share (``sim/tracks/signature``), for any track's arguments."""

from __future__ import annotations

import ast

import pytest

from layersched.sim.tracks.signature import argument_names, signature_problem


def def_of(source: str) -> ast.FunctionDef:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


@pytest.mark.parametrize(
    ("text", "names"),
    [("(env, task, rng)", ("env", "task", "rng")), ("(env,rng)", ("env", "rng")), (" ( view ) ", ("view",))],
)
def test_argument_names(text: str, names: tuple[str, ...]) -> None:
    assert argument_names(text) == names


@pytest.mark.parametrize("text", ["env, rng", "()", "(env, )", "(env task)", "(1x)"])
def test_argument_names_refuses_what_is_not_a_list_of_names(text: str) -> None:
    with pytest.raises(ValueError, match=r"^policy_arguments must look like '\(env, task, rng\)', got "):
        argument_names(text)


@pytest.mark.parametrize(
    "source",
    [
        "def policy(env, rng): pass",
        "def policy(a, b, c=1): pass",
        "def policy(*args): pass",
        "def policy(env, /, rng): pass",
        "def policy(env, rng, *, k=0): pass",
    ],
)
def test_two_argument_contract_accepts(source: str) -> None:
    assert signature_problem(def_of(source), "(env, rng)") is None


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def policy(env): pass", "policy(env) must accept two positional arguments (env, rng)"),
        ("def policy(env, task, rng): pass", "policy(env, task, rng) must accept two positional arguments (env, rng)"),
        ("def policy(env, rng, *, k): pass", "policy(env, rng, k) must accept two positional arguments (env, rng)"),
    ],
)
def test_two_argument_contract_refuses(source: str, problem: str) -> None:
    assert signature_problem(def_of(source), "(env, rng)") == problem


def test_the_count_is_spelt_for_one_and_written_as_a_number_past_four() -> None:
    assert signature_problem(def_of("def policy(): pass"), "(view)") == (
        "policy() must accept one positional argument (view)"
    )
    assert signature_problem(def_of("def policy(a): pass"), "(a, b, c, d, e)") == (
        "policy(a) must accept 5 positional arguments (a, b, c, d, e)"
    )
