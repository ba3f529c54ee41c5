"""The agent's core imports no Textual, no torch or triton, and no provider SDK until one is used."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_agent_core_stays_light():
    code = (
        "import sys; import kerneltui.core.agent, kerneltui.core.agent.chat, kerneltui.core.agent.auto, "
        "kerneltui.core.agent.providers, kerneltui.commands.ask; "
        "bad = [m for m in ('textual', 'torch', 'triton', 'openai', 'anthropic') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
