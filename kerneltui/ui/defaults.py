"""The UI's settings and their defaults (no Textual import: ``kerneltui config`` reads these)."""

from __future__ import annotations

UI_DEFAULTS = {
    "theme": "kerneltui-dark",  # a theme name from themes/ or the user themes folder
    "chart_unit": "us",  # "us" or "percent" (of the roofline floor)
    "asm_hide_directives": True,
    "asm_hide_comments": False,
    "asm_hide_hex": True,
    "run_on_start": True,  # run the loop once when the app opens
    "watch": True,  # rerun on every save of a task file
}
# [keys]: binding id = "key[,key…]" remaps a binding (ids are listed by the help screen, F1).
KEYS_DEFAULTS: dict[str, str] = {}
