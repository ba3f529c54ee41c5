"""What the app does before its first frame: draw the rung rows without importing a rung (the
rung modules pull in the dump's and the profiler's parsers), leave the agent engine, the model SDKs
and everything else the first paint does not show for later, and lower its workers' priority."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltui.core import rungs
from tests.conftest import ROOT


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, **(env or {})})


def test_the_rung_rows_come_without_importing_a_rung():
    proc = _python(
        "import sys\n"
        "from kerneltui.ui.widgets.rungs import registry_rows\n"
        "rows = registry_rows()\n"
        "print(len(rows), sorted(m for m in sys.modules if m.startswith('kerneltui.core.rungs.')))\n")
    assert proc.returncode == 0, proc.stderr
    count, loaded = proc.stdout.split(" ", 1)
    assert int(count) == len(rungs.rung_names())
    for name in rungs.rung_names():
        assert f"kerneltui.core.rungs.{name}'" not in loaded, name


# Modules nothing on the first frame needs: the agent engine (its session, tools, context search), the
# model SDKs and their HTTP client, torch and Triton (never in the UI process), the file watcher,
# Markdown (no reply is shown yet) and every rung.
NOT_BEFORE_FIRST_PAINT = ("kerneltui.core.agent.chat", "kerneltui.core.agent.tools", "kerneltui.core.agent.search",
                          "openai", "anthropic", "httpx", "torch", "triton", "watchfiles", "markdown_it",
                          *(f"kerneltui.core.rungs.{name}" for name in rungs.rung_names()))

OPEN_THE_APP = """
import shutil, sys
from pathlib import Path
import kerneltui.cli, kerneltui.commands.tui
kerneltui.cli.build_parser()  # what `kerneltui` imports before it opens the app
from kerneltui.config import load_config
from kerneltui.ui.launch import create_app
from kerneltui.ui.options import AppOptions
task = Path(sys.argv[1])
shutil.copytree("kerneltui/examples/vector_add", task)
app = create_app(task, settings=load_config(), options=AppOptions(watch_themes=False, record_session=False))
probe = sys.argv[2].split()
print(" ".join(m for m in probe if m in sys.modules))
async def attach():  # what the app does once the first frame is painted, on its event loop
    app.agent.attach(lambda event: None)
    await app.agent.close()
import asyncio
asyncio.run(attach())
print(" ".join(m for m in probe if m in sys.modules))
"""


@pytest.mark.parametrize("key", [{}, {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key"}], ids=["no key", "a key"])
def test_the_app_is_made_without_the_agent_engine_or_the_sdks(tmp_path: Path, key: dict[str, str]):
    env = {**{var: str(tmp_path / var) for var in ("KERNELTUI_CONFIG_DIR", "KERNELTUI_DATA_DIR", "KERNELTUI_CACHE_DIR")},
           "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", **key}
    proc = subprocess.run([sys.executable, "-c", OPEN_THE_APP, str(tmp_path / "vector_add"),
                           " ".join(NOT_BEFORE_FIRST_PAINT)], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    before, after = proc.stdout.splitlines()
    assert before == "", f"imported before the first paint: {before}"
    # The probe names real modules: attaching the agent (after the first paint) loads its engine.
    assert "kerneltui.core.agent.chat" in after.split(), after


def test_opening_the_app_imports_no_other_command():
    proc = _python("import sys\nfrom kerneltui.cli import COMMAND_MODULES, main\n"
                   "code = main(['no-such-task-folder'])\n"
                   "print(code, sorted(n for n in COMMAND_MODULES if f'kerneltui.commands.{n}' in sys.modules))\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 1) == ["2", "['tui']\n"], proc.stdout
    assert "no such task" in proc.stderr


def test_the_rung_rows_say_what_the_rung_specs_say():
    specs = [(s.name, s.title, s.needs_gpu, s.on_demand) for s in rungs.rung_specs()]
    assert rungs.rung_rows() == specs


def test_a_worker_lowers_its_own_priority_when_asked():
    code = ("import os\nfrom kerneltui.core.worker.child.serve import _lower_priority\n"
            "before = os.nice(0)\n_lower_priority(os.environ.get('KERNELTUI_WORKER_NICE'))\nprint(before, os.nice(0))\n")
    proc = _python(code, {"KERNELTUI_WORKER_NICE": "5"})
    assert proc.returncode == 0, proc.stderr
    before, after = map(int, proc.stdout.split())
    assert after == max(before, 5)
    # A worker forked from a zygote that lowered its own priority already is not lowered twice.
    proc = _python("import os\nos.nice(5)\n" + code, {"KERNELTUI_WORKER_NICE": "5"})
    assert proc.returncode == 0, proc.stderr
    before, after = map(int, proc.stdout.split())
    assert after == before >= 5  # whatever priority the tests themselves started at
    bad = _python(code, {"KERNELTUI_WORKER_NICE": "high"})
    before, after = map(int, bad.stdout.split())
    assert after == before
    assert "KERNELTUI_WORKER_NICE='high' not applied" in bad.stderr and "normal priority" in bad.stderr
