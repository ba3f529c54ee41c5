"""Settings: every section's variables are read whatever was imported first, and bad ones are named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str, env: dict[str, str]) -> dict:
    """Run ``code`` in a fresh interpreter (nothing of kerneltui imported before it) and read its JSON."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_agent_variables_are_kept_when_the_config_loads_before_the_agent(tmp_path):
    # The TUI loads the config before it imports the agent: KERNELTUI_AGENT_* must not be dropped.
    code = ("import json; from pathlib import Path; from kerneltui.config import load_config; "
            f"c = load_config(Path({str(tmp_path / 'none.toml')!r})); "
            "print(json.dumps({'model': c.get('agent', 'model'), 'source': c.source('agent', 'model'), "
            "'record': c.get('sessions', 'record'), 'theme': c.get('ui', 'theme')}))")
    got = _fresh(code, {"KERNELTUI_AGENT_MODEL": "gpt-5-mini", "KERNELTUI_SESSIONS_RECORD": "false",
                        "KERNELTUI_UI_THEME": "kerneltui-light"})
    assert got == {"model": "gpt-5-mini", "source": "env KERNELTUI_AGENT_MODEL", "record": False,
                   "theme": "kerneltui-light"}


def test_variables_that_name_no_section_are_not_settings(tmp_path):
    from kerneltui.config import load_config

    cfg = load_config(tmp_path / "none.toml", env={"KERNELTUI_CACHE_DIR": "/tmp/x", "KERNELTUI_WORKER_SCRATCH": "/s"})
    assert "cache" not in cfg.settings and "worker" not in cfg.settings


def test_a_section_kerneltui_does_not_read_is_refused_with_its_line(tmp_path):
    from kerneltui.config import ConfigError, load_config

    cfg = tmp_path / "config.toml"
    cfg.write_text('[ui]\ntheme = "kerneltui-dark"\n\n[agnet]\nmodel = "gpt-5"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{cfg}:4: kerneltui has no settings section \[agnet\]"):
        load_config(cfg, env={})


def test_a_benchmark_value_it_cannot_use_names_the_line_or_the_variable(tmp_path):
    from kerneltui.config import ConfigError, load_config

    cfg = tmp_path / "config.toml"
    cfg.write_text("[benchmark]\nmin_runs = 20\nflush = \"sometimes\"\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{cfg}:3: \[benchmark\] flush must be one of"):
        load_config(cfg, env={})
    with pytest.raises(ConfigError, match="env KERNELTUI_BENCHMARK_MAX_S: unknown \\[benchmark\\] setting 'max_s'"):
        load_config(tmp_path / "none.toml", env={"KERNELTUI_BENCHMARK_MAX_S": "2"})


def test_every_section_kerneltui_reads_has_its_defaults_shown_and_nothing_registers_on_import():
    import kerneltui.config as config
    from kerneltui.commands.config import every_default

    assert sorted(every_default()) == sorted(config.SECTIONS)
    assert not hasattr(config, "register_defaults")
    shown = config.load_config(Path("/nonexistent/config.toml"), env={}, defaults=every_default())
    assert shown.get("agent", "max_tokens") == 8192 and shown.source("agent", "max_tokens") == "default"
    plain = config.load_config(Path("/nonexistent/config.toml"), env={})
    assert plain.section("agent") == {}  # each part applies its own defaults when it reads its section
