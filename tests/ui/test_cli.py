"""The commands around the app: `kerneltui config`, and the app commands outside a terminal."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli


def test_config_shows_each_setting_and_its_source(tmp_path: Path) -> None:
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('[keys]\nrun_loop = "f5"\n[ui]\nchart_unit = "percent"\n')
    out = run_cli("config", env={"KERNELTUI_CONFIG_DIR": str(config_dir), "KERNELTUI_UI_THEME": "kerneltui-light"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"config file: {config_dir / 'config.toml'}" in text
    assert "theme" in text and "'kerneltui-light'" in text and "# env KERNELTUI_UI_THEME" in text
    assert "run_loop" in text and f"# {config_dir / 'config.toml'}" in text
    assert "asm_hide_hex" in text and "# default" in text
    as_json = run_cli("config", "--json", env={"KERNELTUI_CONFIG_DIR": str(config_dir)})
    assert '"source": "default"' in as_json.stdout


def test_config_reports_a_malformed_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[ui\n")
    out = run_cli("config", env={"KERNELTUI_CONFIG_DIR": str(tmp_path)})
    assert out.returncode == 2 and "malformed TOML" in out.stderr and "config.toml" in out.stderr


def test_tui_outside_a_terminal_says_what_to_run_instead(example_task) -> None:
    out = run_cli(str(example_task("vector_add")))
    assert out.returncode == 2
    assert "needs a terminal" in out.stderr and "kerneltui check" in out.stderr


def test_tui_on_a_folder_without_a_task(tmp_path: Path) -> None:
    out = run_cli("tui", str(tmp_path))
    assert out.returncode == 2
    assert "task error" in out.stderr and "kerneltui demo" in out.stderr
