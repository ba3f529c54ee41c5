"""``kerneltui config``: the effective settings and where each one came from."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kerneltui.commands.common import EXIT_OK, EXIT_USAGE


def every_default() -> dict[str, dict[str, Any]]:
    """Each section's defaults, from the tables of the parts that read them (shown as "default")."""
    from kerneltui.core.agent.prices import DEFAULT_PRICES
    from kerneltui.core.agent.settings import AGENT_DEFAULTS
    from kerneltui.core.engine.settings import ENGINE_DEFAULTS
    from kerneltui.core.sandbox.settings import SandboxSettings
    from kerneltui.settings.bench import BenchSettings
    from kerneltui.settings.remote import RemoteSettings
    from kerneltui.settings.sessions import SessionSettings
    from kerneltui.settings.ui import KEYS_DEFAULTS, UI_DEFAULTS

    return {"agent": AGENT_DEFAULTS, "benchmark": BenchSettings().to_dict(), "engine": ENGINE_DEFAULTS,
            "keys": KEYS_DEFAULTS, "prices": DEFAULT_PRICES, "remote": RemoteSettings().to_dict(),
            "sandbox": SandboxSettings().to_dict(), "sessions": SessionSettings().to_dict(), "ui": UI_DEFAULTS}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="show the effective settings and where each came from")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--path", action="store_true", help="print only the config file's path")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui import paths
    from kerneltui.config import ConfigError, config_file, load_config

    if args.path:  # where the file is, also when it cannot be read: the way to go and fix it
        print(config_file())
        return EXIT_OK
    try:
        cfg = load_config(defaults=every_default())
    except ConfigError as exc:
        print(f"kerneltui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        data = {sec: {k: {"value": s.value, "source": s.source} for k, s in values.items()}
                for sec, values in sorted(cfg.settings.items())}
        json.dump({"file": str(cfg.file), "settings": data}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return EXIT_OK
    exists = "" if cfg.file and cfg.file.exists() else "  (does not exist: defaults and env only)"
    print(f"config file: {cfg.file}{exists}")
    print(f"user themes: {paths.user_themes_dir()}")
    for section, values in sorted(cfg.settings.items()):
        print(f"\n[{section}]")
        if not values:
            print("  (none set)")
        for key, setting in sorted(values.items()):
            shown = json.dumps(setting.value) if not isinstance(setting.value, str) else repr(setting.value)
            secret = any(word in key for word in ("key", "token", "secret")) and section != "keys"
            if secret and setting.value:
                shown = "'…" + str(setting.value)[-4:] + "'"
            print(f"  {key:<24} = {shown:<28} # {setting.source}")
    return EXIT_OK

