"""A config file kerneltui cannot use is an error naming the file, line and key; `config --path` still
names the file."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EXAMPLES, copy_tree, run_cli


def test_config_path_names_a_malformed_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[ui\n")
    out = run_cli("config", "--path", env={"KERNELTUI_CONFIG_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "config.toml")


def test_an_engine_value_of_the_wrong_type_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[engine]\nidle_s = "soon"\n')
    task = copy_tree(EXAMPLES / "vector_add", tmp_path / "task")
    for args in (("config",), ("check", str(task), "--rungs", "prechecks", "--no-history")):
        out = run_cli(*args, env={"KERNELTUI_CONFIG_DIR": str(tmp_path)})
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert f"{tmp_path / 'config.toml'}:2: [engine] idle_s = 'soon' is not a positive number of seconds" in out.stderr


def test_an_unknown_engine_key_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[engine]\nenabled = true\nidle = 60\n")
    out = run_cli("config", env={"KERNELTUI_CONFIG_DIR": str(tmp_path)})
    assert out.returncode == 2
    assert f"{tmp_path / 'config.toml'}:3: unknown [engine] setting 'idle'; the settings are" in out.stderr
