"""Record the example session shipped in this folder (``sessions/vector_add_demo``).

Runs the real app, headless (Textual's pilot), on a scratch copy of the bundled vector_add example
with the scripted demo agent (no API key, no network): the loop runs on start, the person asks
"make it faster", the agent reads the kernel, searches the notes and proposes a change whose trial
passes, the person accepts it, and the save reruns the loop. The session the app wrote is then
copied here. Rerun after a change to the event format:

    .venv/bin/python sessions/record_example.py
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "vector_add_demo"


async def record(scratch: Path) -> Path:
    from kerneltui.commands.new import scaffold
    from kerneltui.config import load_config
    from kerneltui.core import events as ev
    from kerneltui.ui.launch import create_app
    from kerneltui.ui.options import AppOptions

    task = scratch / "vector_add"
    scaffold("vector_add", task, force=True)
    settings = load_config()
    app = create_app(task, settings=settings, options=AppOptions(watch=True, run_on_start=True, watch_themes=False,
                                                                 seeds=2))

    async def until(predicate, what: str, timeout: float = 180.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {what}")
            await pilot.pause(0.1)

    def finished() -> list[ev.RunFinished]:
        return [e for e in app.bridge.log if isinstance(e, ev.RunFinished) and not e.cancelled]

    async with app.run_test(size=(160, 45)) as pilot:
        await until(lambda: len(finished()) >= 1, "the first run")
        await pilot.press("f2", *"make it faster", "enter")
        await until(lambda: any(isinstance(e, ev.ProposalEvent) and e.state == "trial_done" for e in app.bridge.log),
                    "the proposal's trial")
        await pilot.press("escape", "a")
        await until(lambda: any(isinstance(e, ev.ProposalEvent) and e.state == "accepted" for e in app.bridge.log),
                    "the accepted proposal")
        count = len(finished())
        await until(lambda: len(finished()) > count, "the run of the accepted version")
        await pilot.pause(0.5)
        folder = app.recorder.log.folder
    return folder


def main() -> int:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        os.environ.pop(name, None)  # the scripted demo agent, whatever this machine has configured
    with tempfile.TemporaryDirectory(prefix="kerneltui-example-") as tmp:
        scratch = Path(tmp)
        os.environ["KERNELTUI_SESSIONS_DIR"] = str(scratch / "sessions")
        os.environ["KERNELTUI_CONFIG_DIR"] = str(scratch / "config")
        folder = asyncio.run(record(scratch))
        target = HERE / NAME
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(folder, target)
    log = target / "log.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    header["id"] = NAME
    lines[0] = json.dumps(header, ensure_ascii=False, separators=(",", ":")) + "\n"
    log.write_text("".join(lines), encoding="utf-8")
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    print(f"wrote {target} ({len(lines)} records, {size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
