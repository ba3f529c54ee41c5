"""The sections read as schemas ([ui], [keys], [sessions], [remote]): typed values, checked at load,
and a value a section cannot use named by its file and line, its variable or its flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltui.config import ConfigError, Flag, load_config
from kerneltui.settings.remote import RemoteSettings
from kerneltui.settings.sessions import SessionSettings
from kerneltui.settings.ui import KeySettings, UiSettings

NONE = Path("/nonexistent/config.toml")


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_each_section_reads_as_its_schema_with_the_layers_in_order(tmp_path):
    cfg_file = _file(tmp_path, '[ui]\nchart_unit = "percent"\nwatch = false\n\n[sessions]\nrecord = false\n'
                               '[remote]\ngpu_host = "me@box"\nport = 2222\nssh_options = ["Compression=yes"]\n'
                               '[keys]\nrun_loop = "f5, ctrl+r"\n')
    cfg = load_config(cfg_file, env={"KERNELTUI_UI_THEME": "kerneltui-light", "KERNELTUI_SESSIONS_DIR": "/tmp/s"},
                      flags=[Flag("--gpu-host", "remote", "gpu_host", "you@other"),
                             Flag("--ssh-port", "remote", "port", None)])
    assert cfg.read(UiSettings) == UiSettings(theme="kerneltui-light", chart_unit="percent", watch=False)
    assert cfg.read(SessionSettings) == SessionSettings(dir="/tmp/s", record=False)
    remote = cfg.read(RemoteSettings)
    assert (remote.gpu_host, remote.port, remote.ssh_options) == ("you@other", 2222, ("Compression=yes",))
    assert cfg.source("remote", "gpu_host") == "--gpu-host"  # a flag left unset (None) is no layer
    assert cfg.read(KeySettings).remaps == (("run_loop", "f5,ctrl+r"),)
    assert load_config(NONE, env={}).read(UiSettings) == UiSettings()


@pytest.mark.parametrize(("text", "line", "message"), [
    ('[ui]\ntheme = "x"\nchart_unit = "ms"\n', 3, r"\[ui\] chart_unit must be one of us, percent, not 'ms'"),
    ('[ui]\nwatch = "sometimes"\n', 2, r"\[ui\] watch must be true or false, not 'sometimes'"),
    ('[ui]\n\nthme = "kerneltui-light"\n', 3, r"unknown \[ui\] setting 'thme'; the settings are asm_hide_comments"),
    ('[keys]\nrun_loop = 5\n', 2, r"\[keys\] run_loop: give a key as a string"),
    ('[sessions]\nrecord = 2\n', 2, r"\[sessions\] record must be true or false, not 2"),
    ('[sessions]\ndir = ["a"]\n', 2, r"\[sessions\] dir must be a string"),
    ('[remote]\ngpu_host = "h"\nport = 70000\n', 3, r"\[remote\] port must be a port number \(1 to 65535\)"),
    ('[remote]\nssh_options = "Compression=yes"\n', 2,
     r'\[remote\] ssh_options must be a list of "Key=Value" strings'),
])
def test_a_bad_value_in_the_file_names_the_file_and_line(tmp_path, text, line, message):
    cfg_file = _file(tmp_path, text)
    with pytest.raises(ConfigError, match=rf"^{cfg_file}:{line}: {message}"):
        load_config(cfg_file, env={})


@pytest.mark.parametrize(("name", "value", "message"), [
    ("KERNELTUI_UI_CHART_UNIT", "ms", r"\[ui\] chart_unit must be one of us, percent"),
    ("KERNELTUI_UI_ASM_HIDE_HEX", "maybe", r"\[ui\] asm_hide_hex must be true or false"),
    ("KERNELTUI_KEYS_RUN_LOOP", "3", r"\[keys\] run_loop: give a key as a string"),
    ("KERNELTUI_SESSIONS_RECORD", "often", r"\[sessions\] record must be true or false"),
    ("KERNELTUI_REMOTE_PORT", "ssh", r"\[remote\] port must be a whole number, not 'ssh'"),
])
def test_a_bad_value_in_the_environment_names_the_variable(name, value, message):
    with pytest.raises(ConfigError, match=rf"^env {name}: {message}"):
        load_config(NONE, env={name: value})


def test_a_bad_value_from_a_flag_names_the_flag():
    with pytest.raises(ConfigError, match=r"^--ssh-port: \[remote\] port must be a port number"):
        load_config(NONE, env={}, flags=[Flag("--ssh-port", "remote", "port", -1)])


def test_yes_and_no_from_the_environment_are_flags_not_strings():
    from kerneltui.core.session.store import recording_enabled

    # bool("no") is True: a plain truth test of the variable's text turned recording on.
    assert recording_enabled(load_config(NONE, env={"KERNELTUI_SESSIONS_RECORD": "no"})) is False
    assert load_config(NONE, env={"KERNELTUI_UI_WATCH": "off"}).read(UiSettings).watch is False


def test_a_number_given_for_a_name_is_kept_as_the_name():
    assert load_config(NONE, env={"KERNELTUI_REMOTE_GPU_HOST": "10"}).read(RemoteSettings).gpu_host == "10"


def test_every_command_layers_its_flags_in_load_config():
    import argparse

    from kerneltui.config import flags_from_args
    from kerneltui.core.agent.settings import AGENT_FLAGS, AgentSettings
    from kerneltui.settings.remote import REMOTE_FLAGS

    args = argparse.Namespace(provider="openai-compatible", model="qwen-test", base_url=None, api=None,
                              api_key_env="MY_KEY", script=None, gpu_host="me@box", remote_python=None,
                              ssh_port=2200, ssh_identity=None)
    cfg = load_config(NONE, env={"KERNELTUI_AGENT_MODEL": "from-env"},
                      flags=[*flags_from_args(args, "agent", AGENT_FLAGS), *flags_from_args(args, "remote", REMOTE_FLAGS)])
    agent = AgentSettings.from_config(cfg)
    assert (agent.provider, agent.model, agent.api_key_env) == ("openai-compatible", "qwen-test", "MY_KEY")
    assert cfg.source("agent", "model") == "--model" and cfg.source("agent", "base_url") is None
    assert (cfg.read(RemoteSettings).gpu_host, cfg.read(RemoteSettings).port) == ("me@box", 2200)
