"""Checking the API's JSON against the response types and building them: an answer that is off (a missing field,
a wrong type) raises ``ServerError`` naming where, instead of reaching the caller half-built. Every string passes
through ``terminal_text.shown`` (the CLI's terminal text; unchanged for scripts)."""

from __future__ import annotations

import dataclasses
import types
from typing import Annotated, Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from layersched.sdk.api.responses import Page
from layersched.sdk.errors import ServerError
from layersched.sdk.terminal_text import MULTILINE, shown

T = TypeVar("T")


def json_field(raw: Any, name: str, where: str) -> Any:
    if not isinstance(raw, dict) or name not in raw:
        raise ServerError(200, "invalid_response", f"{where}: expected a JSON object with {name!r}, got {_short(raw)}")
    return raw[name]


def decode_page(raw: Any, item: type[T], where: str) -> Page[T]:
    data = decode_list(item, json_field(raw, "data", where), f"{where}.data")
    count = decode(int, json_field(raw, "count", where), f"{where}.count")
    return Page(data=data, count=count)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def decode(tp: type[T], value: Any, where: str) -> T:
    """Check ``value`` (parsed JSON) against the type ``tp`` and build dataclasses; raise ``ServerError`` if off."""
    return cast(T, decode_any(tp, value, where))


def decode_list(item: type[T], value: Any, where: str) -> list[T]:
    return cast(list[T], decode_any(list[item], value, where))  # type: ignore[valid-type]


def decode_any(tp: Any, value: Any, where: str) -> Any:

    def bad(expected: str) -> ServerError:
        return ServerError(200, "invalid_response", f"{where}: expected {expected}, got {_short(value)}")

    origin = get_origin(tp)
    if tp is Any or tp is object:
        return _json_text(value)
    if origin is Annotated:
        base, *marks = get_args(tp)
        if base is str and MULTILINE in marks:
            if not isinstance(value, str):
                raise bad("a string")
            return shown(value, multiline=True)
        return decode_any(base, value, where)
    if origin is Union or origin is types.UnionType:
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        real = [o for o in options if o is not type(None)]
        if len(real) != 1:
            raise TypeError(f"_decode does not support {tp!r}")
        return decode_any(real[0], value, where)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise bad(f"a JSON object for {tp.__name__}")
        hints = get_type_hints(tp, include_extras=True)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(tp):
            if f.name in value:
                kwargs[f.name] = decode_any(hints[f.name], value[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ServerError(200, "invalid_response", f"{where}: missing field {f.name!r} in {_short(value)}")
        return tp(**kwargs)
    if origin is list:
        if not isinstance(value, list):
            raise bad("a JSON array")
        (item,) = get_args(tp)
        return [decode_any(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise bad("a JSON object")
        _, item = get_args(tp)
        return {shown(str(k)): decode_any(item, v, f"{where}.{k}") for k, v in value.items()}
    if origin is Literal:
        if value not in get_args(tp):
            raise bad(" or ".join(repr(a) for a in get_args(tp)))
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise bad("a string")
        return shown(value)
    raise TypeError(f"_decode does not support {tp!r}")


def _json_text(value: Any) -> Any:
    """A JSON value of no declared type (an audit entry's detail), its strings and keys passed through ``shown``."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, list):
        return [_json_text(v) for v in value]
    if isinstance(value, dict):
        return {shown(str(k)): _json_text(v) for k, v in value.items()}
    return value
