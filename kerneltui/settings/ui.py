"""The UI's settings (``[ui]``, ``[keys]``) and their defaults (no Textual import: ``kerneltui config``
and the config's check at load read these)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from kerneltui.settings.schema import SettingValueError

CHART_UNITS = ("us", "percent")


@dataclass(frozen=True)
class UiSettings:
    SECTION: ClassVar[str] = "ui"

    theme: str = "kerneltui-dark"  # a theme name from themes/ or the user themes folder
    chart_unit: str = field(default="us", metadata={"choices": CHART_UNITS})  # µs, or % of the roofline floor
    asm_hide_directives: bool = True
    asm_hide_comments: bool = False
    asm_hide_hex: bool = True
    run_on_start: bool = True  # run the loop once when the app opens
    watch: bool = True  # rerun on every save of a task file

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KeySettings:
    """``[keys]``: binding id = "key[,key…]" remaps a binding (ids are listed by the help screen, F1).

    Whether an id names a binding is known only beside the bindings (``ui.keys``, which imports
    Textual): an unknown id is a problem the app shows, not a refusal at load.
    """

    SECTION: ClassVar[str] = "keys"

    remaps: tuple[tuple[str, str], ...] = ()  # (binding id, keys), in the order given

    @classmethod
    def from_entries(cls, values: Mapping[str, Any]) -> KeySettings:
        remaps = []
        for binding_id, keys in values.items():
            if not isinstance(keys, str) or not keys.strip():
                raise SettingValueError(binding_id, f"[keys] {binding_id}: give a key as a string, "
                                                    f"e.g. \"ctrl+r\" or \"f5,ctrl+r\"")
            remaps.append((binding_id, keys.replace(" ", "")))
        return cls(tuple(remaps))


UI_DEFAULTS = UiSettings().to_dict()
KEYS_DEFAULTS: dict[str, str] = {}
