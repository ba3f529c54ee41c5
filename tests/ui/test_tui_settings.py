"""`kerneltui TASK` takes the settings every other command takes: KERNELTUI_AGENT_* / KERNELTUI_UI_*,
the config file, and --provider / --model / --base-url (issue 20, defect 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_cli

# What `kerneltui TASK ...` would open, read in a fresh interpreter (nothing registered beforehand, as
# at a real start), printed as JSON instead of running the app (which needs a terminal).
PROBE = """
import json, sys
from kerneltui.cli import build_parser
from kerneltui.commands import tui
args = build_parser().parse_args(["tui", *sys.argv[1:]])
# Before load_settings existed, main() called load_config() itself: the same call, to show the old defect.
settings = tui.load_settings(args) if hasattr(tui, "load_settings") else __import__("kerneltui.config").config.load_config()
app = tui.open_app(__import__("pathlib").Path(args.task), settings=settings, watch=False)
print(json.dumps({"theme": settings.get("ui", "theme"), "provider": settings.get("agent", "provider"),
                  "model": settings.get("agent", "model"), "base_url": settings.get("agent", "base_url"),
                  "provider_source": settings.source("agent", "provider"), "label": app.agent.label}))
"""


def _probe(*args: str, env: dict[str, str]) -> dict:
    import os

    full = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=full, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_env_settings_reach_the_app(example_task, tmp_path: Path) -> None:
    shown = _probe(str(example_task("vector_add")), env={
        "KERNELTUI_UI_THEME": "kerneltui-light", "KERNELTUI_AGENT_PROVIDER": "openai",
        "KERNELTUI_AGENT_MODEL": "gpt-env", "OPENAI_API_KEY": "sk-test-not-sent"})
    assert shown["theme"] == "kerneltui-light"
    assert shown["provider"] == "openai" and shown["model"] == "gpt-env"
    assert shown["provider_source"] == "env KERNELTUI_AGENT_PROVIDER"
    # One place says which provider, model and key: the agent's label (chat header, status line).
    assert "openai" in shown["label"] and "gpt-env" in shown["label"] and "env OPENAI_API_KEY" in shown["label"]


def test_flags_override_config_and_env(example_task, tmp_path: Path) -> None:
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('[agent]\nprovider = "anthropic"\nmodel = "from-file"\n')
    shown = _probe(str(example_task("vector_add")), "--provider", "openai-compatible", "--model", "qwen-test",
                   "--base-url", "http://127.0.0.1:9/v1",
                   env={"KERNELTUI_CONFIG_DIR": str(config_dir), "KERNELTUI_AGENT_MODEL": "from-env"})
    assert (shown["provider"], shown["model"], shown["base_url"]) == (
        "openai-compatible", "qwen-test", "http://127.0.0.1:9/v1")
    assert shown["provider_source"] == "--provider"
    assert "qwen-test" in shown["label"] and "127.0.0.1:9" in shown["label"]


def test_the_provider_flag_is_accepted_on_the_task(example_task) -> None:
    out = run_cli(str(example_task("vector_add")), "--provider", "openai", "--model", "gpt-test")
    assert "unrecognized arguments" not in out.stderr
    assert out.returncode == 2 and "needs a terminal" in out.stderr


def test_no_in_the_environment_turns_watching_and_the_first_run_off(example_task) -> None:
    """The app's options read [ui] through its schema: KERNELTUI_UI_WATCH=no was the string "no",
    which counted as true, so the app watched anyway."""
    from kerneltui.config import load_config
    from kerneltui.ui.launch import create_app

    task = example_task("vector_add")
    settings = load_config(env={"KERNELTUI_UI_WATCH": "no", "KERNELTUI_UI_RUN_ON_START": "false"})
    app = create_app(task, settings=settings)
    assert app.options.watch is False and app.options.run_on_start is False
    app = create_app(task, settings=load_config(env={}))
    assert app.options.watch is True and app.options.run_on_start is True
