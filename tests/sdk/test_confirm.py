"""The confirmation of irreversible organiser actions (issue 29): asked on a terminal, --yes in scripts, refused
without either."""

from __future__ import annotations

import pytest

from layersched.sdk.confirm import confirm
from layersched.sdk.errors import ConfigError


def test_yes_goes_on_without_asking() -> None:
    confirm("publish x", yes=True, interactive=lambda: False, ask=lambda _: pytest.fail("asked"))


@pytest.mark.parametrize("answer", ["y", "Y", "yes", " yes "])
def test_a_yes_at_the_terminal_goes_on(answer: str, capsys: pytest.CaptureFixture[str]) -> None:
    asked: list[str] = []
    confirm("publish x", yes=False, interactive=lambda: True, ask=lambda q: asked.append(q) or answer)
    assert asked == ["Go on? [y/N] "]
    assert capsys.readouterr().err == "publish x: this cannot be undone.\n"


@pytest.mark.parametrize(("answer", "shown"), [("", "nothing"), ("n", "'n'"), ("sure", "'sure'")])
def test_anything_else_at_the_terminal_stops(answer: str, shown: str) -> None:
    with pytest.raises(ConfigError) as exc:
        confirm("publish x", yes=False, interactive=lambda: True, ask=lambda _: answer)
    assert str(exc.value) == f"not done: publish x (answered {shown}, not y)"


def test_end_of_input_at_the_terminal_stops() -> None:
    def eof(_: str) -> str:
        raise EOFError

    with pytest.raises(ConfigError, match="answered nothing"):
        confirm("publish x", yes=False, interactive=lambda: True, ask=eof)


def test_no_terminal_and_no_yes_is_refused() -> None:
    with pytest.raises(ConfigError) as exc:
        confirm("disqualify submission #3 (copied)", yes=False, interactive=lambda: False)
    assert str(exc.value) == (
        "not done: disqualify submission #3 (copied) asks for confirmation; pass --yes to do it without a terminal"
    )
