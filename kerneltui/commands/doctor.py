"""``kerneltui doctor``: the sandbox candidate code runs in here, part by part, and why any part is off.

It builds the box a worker would get (scratch folder, cgroup, policy), reports it and takes it down
again without starting anything; what it reports is what ``check``, ``watch`` and the TUI apply.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kerneltui.commands.common import EXIT_OK, EXIT_USAGE, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="show the sandbox workers run in: which parts are on, and why any is off")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.config import ConfigError, load_config
    from kerneltui.core.sandbox.box import open_box
    from kerneltui.core.sandbox.policy import sandbox_lines, sandbox_note
    from kerneltui.core.sandbox.settings import SECTION, SandboxSettings
    from kerneltui.core.sandbox.support import support
    from kerneltui.core.worker.parent.runner import default_runner

    try:
        config = load_config()
        settings = SandboxSettings.from_mapping(config.section(SECTION))
    except ConfigError as exc:
        print(f"kerneltui doctor: {exc}", file=sys.stderr)
        return EXIT_USAGE
    runner = default_runner()
    measured = support()
    box = open_box(settings, measured, python=sys.executable)
    try:
        state, env = box.state, box.env
    finally:
        box.release()
    source = config.source(SECTION, "enabled") or "default"
    remote = runner.describe() if runner.name != "local" else ""
    data: dict[str, Any] = {
        "sandbox": state.to_dict(), "note": sandbox_note(state), "enabled_from": source,
        "measured": measured.to_dict(), "environment": sorted(k for k in env if k not in ("HOME", "TMPDIR", "TMP", "TEMP")),
        "workers_run_on": remote or "this machine",
    }
    if args.json:
        print_json(data)
        return EXIT_OK
    lines = sandbox_lines(state)
    lines[0] += f"   (enabled: {settings.enabled}, from {source})"
    print("\n".join(lines))
    print(f"variables workers get: {', '.join(data['environment'])}")
    print("(HOME and TMPDIR point into each worker's scratch folder, removed when the worker ends)")
    if remote:
        print(f"note: workers run on {remote}; the supervisor there decides its box from that host's facts "
              "and prints it as the worker's first line of output")
    return EXIT_OK
