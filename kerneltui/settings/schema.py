"""A section of the config as a frozen dataclass: each value checked against its field's default.

A schema is a frozen dataclass whose class attribute ``SECTION`` names its ``[section]``; every field
has a default (what kerneltui does when nothing is set). :func:`build` turns the values the file, the
environment and the flags set into one, naming the key at fault; ``Config.read`` adds where that key
was set (the file and line, the variable or the flag). Every schema lives in ``kerneltui.settings``,
which imports nothing above it, so the config can check every section at load without importing the
parts that read them.

Field metadata: ``choices`` (the values allowed), ``accepts`` (a predicate and what it wants), ``hint``
(what to write, added to a message about the field's type).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import Field, fields
from typing import Any, ClassVar, Protocol, TypeVar


class SettingsSchema(Protocol):
    SECTION: ClassVar[str]
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # every section's schema is a dataclass


SchemaT = TypeVar("SchemaT", bound=SettingsSchema)

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


class SettingValueError(ValueError):
    """A value of ``key`` that its section cannot use; the message says what it takes."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def build(schema: type[SchemaT], values: Mapping[str, Any]) -> SchemaT:
    """``schema`` with ``values`` over its defaults; raises SettingValueError naming the key at fault.

    A schema with a ``from_entries`` class method (a section whose keys are not fixed, like ``[keys]``)
    builds itself from the values.
    """
    custom: Callable[[Mapping[str, Any]], SchemaT] | None = getattr(schema, "from_entries", None)
    if custom is not None:
        return custom(values)
    section = schema.SECTION
    known = {f.name: f for f in fields(schema)}
    checked: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in known:
            raise SettingValueError(key, f"unknown [{section}] setting {key!r}; the settings are "
                                         f"{', '.join(sorted(known))}")
        checked[key] = check_value(section, known[key], raw)
    return schema(**checked)


def check_value(section: str, spec: Field[Any], raw: Any) -> Any:
    """``raw`` as the type of the field's default, within its choices; or SettingValueError."""
    value = _as_type(section, spec, raw, spec.default)  # every field of a schema has a plain default
    choices = spec.metadata.get("choices")
    if choices is not None and value not in choices:
        raise SettingValueError(spec.name, f"[{section}] {spec.name} must be one of "
                                           f"{', '.join(map(str, choices))}, not {raw!r}")
    accepts = spec.metadata.get("accepts")
    if accepts is not None and not accepts[0](value):
        raise SettingValueError(spec.name, f"[{section}] {spec.name} must be {accepts[1]}, not {raw!r}")
    return value


def _as_type(section: str, spec: Field[Any], raw: Any, default: Any) -> Any:
    kind = type(default)
    hint = spec.metadata.get("hint")
    wanted = hint or {bool: "true or false", int: "a whole number", float: "a number",
                      str: "a string", tuple: "a list"}.get(kind, kind.__name__)

    def wrong() -> SettingValueError:
        return SettingValueError(spec.name, f"[{section}] {spec.name} must be {wanted}, not {raw!r}")

    if kind is bool:
        if isinstance(raw, bool):
            return raw
        word = str(raw).strip().lower()
        if word in TRUE_WORDS or word in FALSE_WORDS:
            return word in TRUE_WORDS
        raise wrong()
    if kind is int or kind is float:
        if isinstance(raw, bool) or (kind is int and isinstance(raw, float) and not raw.is_integer()):
            raise wrong()
        try:
            return kind(raw)
        except (TypeError, ValueError):
            raise wrong() from None
    if kind is tuple:
        if not isinstance(raw, (list, tuple)) or not all(isinstance(item, str) for item in raw):
            raise wrong()
        return tuple(raw)
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return str(raw)  # KERNELTUI_REMOTE_GPU_HOST=10 reads as a number: the name it was meant as
    if not isinstance(raw, str):
        raise wrong()
    return raw
