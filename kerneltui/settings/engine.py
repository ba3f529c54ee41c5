"""The ``[engine]`` keys, their defaults and what each takes (``kerneltui.core.engine.settings``
reads them into ``EngineSettings``; ``kerneltui.config`` checks them at load)."""

from __future__ import annotations

from typing import Any

from kerneltui.settings.schema import FALSE_WORDS, TRUE_WORDS

ENGINE_DEFAULTS: dict[str, Any] = {
    "enabled": True,  # commands use (and start) the engine; false: every command runs its own workers
    "idle_s": 900.0,  # the engine stops after this long with no client and no run
    "dir": "",  # where the socket and key live (default: $XDG_RUNTIME_DIR/kerneltui, else the cache dir)
    "candidate_spares": 2,  # ready workers kept per backend: a full check takes two (checks, benchmark)
    "judge_spares": 1,
    "start_timeout_s": 60.0,  # how long a command waits for an engine it started to answer
}


def check_setting(key: str, value: Any) -> None:
    """Raise ValueError saying what ``[engine] key`` takes when ``value`` is not usable, or the key is not
    one of the engine's (``config.load_config`` adds the file and line): a value read as something else
    would turn the engine off or leave it on for ever without a word."""
    if key not in ENGINE_DEFAULTS:
        raise ValueError(f"unknown [engine] setting {key!r}; the settings are {', '.join(sorted(ENGINE_DEFAULTS))}")
    if key == "enabled":
        try:
            flag(value)
        except ValueError as exc:
            raise ValueError(f"[engine] {exc}") from None
    elif key == "dir":
        if not isinstance(value, str):
            raise ValueError(f"[engine] dir = {value!r} is not a folder (write dir = \"/path/to/folder\")")
    elif key.endswith("_s"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"[engine] {key} = {value!r} is not a positive number of seconds (write e.g. {key} = "
                             f"{ENGINE_DEFAULTS[key]:g})")
    elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"[engine] {key} = {value!r} is not a count of 0 or more (write e.g. {key} = {ENGINE_DEFAULTS[key]})")


def flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS or text == "":
        return False
    raise ValueError(f"enabled = {value!r} is not true or false")
