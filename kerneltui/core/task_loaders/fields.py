"""Typed reading of task settings: every value is checked before anything runs.

Each reader takes the settings file (:class:`SettingsFile`: its path and where each key is
written), the key path and the raw value, and returns the value with its proper type or raises a
:class:`TaskError` naming the file, the line, what was found and what to write instead. Nothing
is coerced: ``inplace = "false"`` or ``inplace = 1`` would otherwise read as true and silently turn
checks off, so a boolean must be a boolean, a count a positive integer, a tolerance a number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kerneltui.core.case_params import CaseParams
from kerneltui.core.task import Case, TaskError, operator_name

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class SettingsFile:
    """A settings file (task.toml, task.yml, a KernelBench header) and the line of each key in it."""

    path: Path
    lines: Mapping[KeyPath, int] = field(default_factory=dict)

    def line(self, key: Sequence[str | int]) -> int | None:
        path = tuple(key)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def error(self, key: Sequence[str | int], message: str) -> TaskError:
        return TaskError(message, self.path, self.line(key))


def key_name(key: Sequence[str | int]) -> str:
    """``("tests", 2, "seed")`` reads as ``tests[3].seed`` (entries counted from one)."""
    out = ""
    for part in key:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def show(value: Any) -> str:
    """A value as the message names it: its type in words, then the value."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f'the string "{value}"'
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, (list, tuple)):
        return "a list"
    if value is None:
        return "an empty value"
    return f"a {type(value).__name__}"


def boolean(src: SettingsFile, key: KeyPath, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    hint = "write true or false without quotes" if isinstance(value, str) else "write true or false"
    raise src.error(key, f"{key_name(key)} must be a boolean, not {show(value)}: {hint} (a value of another type "
                         "is never read as one)")


def integer(src: SettingsFile, key: KeyPath, value: Any, minimum: int | None = None, what: str = "an integer") -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise src.error(key, f"{key_name(key)} must be {what}, not {show(value)}")
    if minimum is not None and value < minimum:
        raise src.error(key, f"{key_name(key)} must be {what}, not {value}")
    return value


def positive_int(src: SettingsFile, key: KeyPath, value: Any) -> int:
    return integer(src, key, value, minimum=1, what="a positive integer")


def number(src: SettingsFile, key: KeyPath, value: Any, *, positive: bool = False, non_negative: bool = False,
           low: float | None = None, high: float | None = None) -> float:
    name = key_name(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise src.error(key, f"{name} must be a number, not {show(value)}")
    x = float(value)
    if not math.isfinite(x):
        raise src.error(key, f"{name} must be a finite number, not {value!r}")
    if positive and x <= 0:
        raise src.error(key, f"{name} must be a positive number of seconds, not {value!r}"
                        if "timeout" in name else f"{name} must be positive, not {value!r}")
    if non_negative and x < 0:
        raise src.error(key, f"{name} must not be negative, not {value!r}")
    if (low is not None and x < low) or (high is not None and x > high):
        raise src.error(key, f"{name} must be between {low} and {high}, not {value!r}")
    return x


def string(src: SettingsFile, key: KeyPath, value: Any, choices: Sequence[str] | None = None,
           non_empty: bool = False) -> str:
    name = key_name(key)
    if not isinstance(value, str):
        raise src.error(key, f"{name} must be a string, not {show(value)}")
    if non_empty and not value.strip():
        raise src.error(key, f"{name} must not be empty")
    if choices is not None and value not in choices:
        raise src.error(key, f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


ChoiceT = TypeVar("ChoiceT", bound=str)


def choice(src: SettingsFile, key: KeyPath, value: Any, choices: Sequence[ChoiceT]) -> ChoiceT:
    """A string that must be one of ``choices``, returned as the choice it is (typed as they are: a Literal)."""
    text = string(src, key, value, choices=choices)
    return next(c for c in choices if c == text)


def string_list(src: SettingsFile, key: KeyPath, value: Any, choices: Sequence[str] | None = None) -> list[str]:
    name = key_name(key)
    if not isinstance(value, list):
        raise src.error(key, f"{name} must be a list of strings, not {show(value)}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise src.error((*key, i), f"{name} entry {i + 1} must be a string, not {show(item)}")
        if choices is not None and item not in choices:
            raise src.error((*key, i), f"{name} has an unknown entry {item!r}; known: {', '.join(sorted(choices))}")
        out.append(item)
    return out


def operator_list(src: SettingsFile, key: KeyPath, value: Any) -> frozenset[str]:
    """``allow_ops``: torch operators by name (``conv2d``, ``aten::addmm``), kept bare."""
    names = set()
    for i, item in enumerate(string_list(src, key, value)):
        name = operator_name(item)
        if not name:
            raise src.error((*key, i), f"{key_name(key)} names torch operators (conv2d, convolution, linear, "
                                       f"softmax …), not {item!r}")
        names.add(name)
    return frozenset(names)


def table(src: SettingsFile, key: KeyPath, value: Any, known: Sequence[str] | None = None) -> dict[str, Any]:
    name = key_name(key)
    if not isinstance(value, Mapping):
        raise src.error(key, f"[{name}] must be a table of settings, not {show(value)}")
    if known is not None:
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise src.error((*key, unknown[0]), f"[{name}] has unknown keys {unknown}; known: {sorted(known)}")
    return {str(k): v for k, v in value.items()}


# Case parameters are checked against the annotations of the function that receives them.
_ANNOTATED = {
    "int": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "float": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "bool": ("a boolean", lambda v: isinstance(v, bool)),
    "str": ("a string", lambda v: isinstance(v, str)),
}
_SCALARS = (bool, int, float, str)


def parameter(src: SettingsFile, key: KeyPath, value: Any, annotation: str | None, receiver: str) -> Any:
    """One case parameter: a plain value, of the type ``receiver`` declares for it when it does."""
    name = key_name(key)
    if isinstance(value, Mapping) or (isinstance(value, list) and not all(isinstance(v, _SCALARS) for v in value)):
        raise src.error(key, f"{name} must be a plain value (a number, a string, a boolean or a list of them), "
                             f"not {show(value)}")
    if value is None:
        raise src.error(key, f"{name} has no value")
    rule = _ANNOTATED.get(annotation or "")
    if rule is not None and not rule[1](value):
        raise src.error(key, f"{name} must be {rule[0]} ({receiver} declares {key[-1]}: {annotation}), not {show(value)}")
    return value


def cases(src: SettingsFile, key: KeyPath, items: Any, annotations: Mapping[str, str], receiver: str,
          seed_key: str = "seed") -> tuple[Case, ...]:
    """``[[tests]]``/``[[benchmarks]]`` (or task.yml's lists): tables of parameters, each with an
    optional integer seed."""
    if items is None:
        return ()
    name = key_name(key)
    if not isinstance(items, list):
        raise src.error(key, f"{name} must be a list of tables of parameters, not {show(items)}")
    out: list[Case] = []
    for i, item in enumerate(items):
        where = (*key, i)
        if not isinstance(item, Mapping):
            raise src.error(where, f"{name} entry {i + 1} must be a table of parameters, not {show(item)}")
        params: CaseParams = {}
        seed: int | None = None
        for k, v in item.items():
            if k == seed_key:
                seed = integer(src, (*where, k), v, minimum=0, what="a non-negative integer")
            else:
                params[str(k)] = parameter(src, (*where, str(k)), v, annotations.get(str(k)), receiver)
        out.append(Case(params=params, seed=seed))
    return tuple(out)
