"""The import rules, checked in fresh interpreters: the UI loads no torch/triton, core loads no Textual."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import kerneltui.core

ROOT = Path(__file__).resolve().parent.parent.parent


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def _roots(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_ui_app_imports_no_torch_or_triton() -> None:
    loaded = _roots(_loaded_after("import kerneltui.ui.launch, kerneltui.ui.adapters.agent_chat, kerneltui.commands.tui"))
    assert "textual" in loaded  # the probe really imported the UI
    assert not loaded & {"torch", "triton", "cutlass", "numpy"}, loaded & {"torch", "triton", "cutlass", "numpy"}


def test_core_imports_no_textual() -> None:
    # Every module under kerneltui.core, except the worker-side ones that import torch on purpose.
    names = [m.name for m in pkgutil.walk_packages(kerneltui.core.__path__, "kerneltui.core.")]
    assert len(names) > 20
    code = "\n".join(f"import {name}" for name in names if not name.startswith("kerneltui.core.worker.child.serve"))
    loaded = _roots(_loaded_after(code))
    assert "textual" not in loaded and "rich" not in loaded
