"""The engine's pure parts: GPU sharing, requests and reports as data, its settings and fingerprint,
the key file's rules and the handshake over a real socket pair."""

from __future__ import annotations

import asyncio
import math
import os
import socket
from pathlib import Path

import pytest

from kerneltui.config import ConfigError, load_config
from kerneltui.core.engine.channel import AuthError, Channel, KeyFileError, create_key, read_key
from kerneltui.core.engine.messages import RunRequest, report_from_dict, report_to_dict
from kerneltui.core.engine.pools import GpuAccess
from kerneltui.core.engine.settings import EngineFiles, EngineSettings, fingerprint
from kerneltui.core.events import VerdictReached
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.context import ProfileOptions, RunOptions, TraceOptions
from kerneltui.core.rungs.result import SourceLocation, fail, ok
from kerneltui.core.task import LoadOptions
from kerneltui.settings.bench import BenchSettings


async def test_timed_runs_have_the_gpu_alone_and_are_not_starved():
    gpu = GpuAccess()
    order: list[str] = []

    async def run(name: str, exclusive: bool, hold_s: float) -> None:
        async with gpu.hold(exclusive):
            order.append(f"{name}+")
            await asyncio.sleep(hold_s)
            order.append(f"{name}-")

    first = asyncio.create_task(run("check1", False, 0.05))
    await asyncio.sleep(0)
    timed = asyncio.create_task(run("bench", True, 0.05))
    await asyncio.sleep(0)
    late = asyncio.create_task(run("check2", False, 0.01))  # arrives after the timed run asked
    await asyncio.gather(first, timed, late)
    assert order == ["check1+", "check1-", "bench+", "bench-", "check2+", "check2-"]
    assert not gpu.busy


async def test_checks_share_the_gpu():
    gpu = GpuAccess()
    inside = 0
    most = 0

    async def check() -> None:
        nonlocal inside, most
        async with gpu.hold(False) as waited:
            assert waited is False
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.02)
            inside -= 1

    await asyncio.gather(check(), check(), check())
    assert most == 3


def test_run_request_and_report_round_trip(tmp_path: Path):
    options = RunOptions(rungs=["correctness"], seeds=2, timeout_s=30.0, arch="sm_90a", kernel_source="x = 1\n",
                         origin="proposal", record=False, override_folder="ov/1",
                         benchmark=BenchSettings(max_seconds=2.0, graph="off"), profile=ProfileOptions(case=1, kernel_name="k.*"),
                         trace=TraceOptions(case=2, reps=3))
    load = LoadOptions(backend="torch", constants=(("N", "64"), ("dim", "33")), scale=0.5)
    request = RunRequest.from_dict(RunRequest.make(tmp_path, tmp_path / "k.py", load, options).to_dict())
    assert request.task == str(tmp_path.resolve()) and request.kernel == str((tmp_path / "k.py").resolve())
    assert request.run_options() == options
    assert request.load == load
    report = RunReport(run_id="r1", task="t", ok=False, device={"gpu": False},
                       results=[ok("compile", "fine", metrics={"regs": 26}),
                                fail("correctness", "wrong at case 2", location=SourceLocation("kernel.py", 12))],
                       source_hash="abc", duration_s=1.5, version_id="3", data={"odd": Path("/x"), "nan": math.nan},
                       verdicts=[VerdictReached(run_id="r1", ok=False, failed_rung="correctness", pending=["dump"],
                                                after_s=0.7)])
    back = report_from_dict(report_to_dict(report))
    assert back.results == report.results
    assert back.verdicts == report.verdicts  # when the verdict was known crosses the engine's socket too
    assert back.to_json() == report.to_json()
    assert back.data["odd"] == "/x" and math.isnan(back.data["nan"])


def test_a_request_without_a_task_is_refused():
    with pytest.raises(ValueError, match="names its task"):
        RunRequest.from_dict({"options": {}})


def good_request(tmp_path: Path) -> dict:
    return RunRequest.make(tmp_path, None, LoadOptions(backend="torch"), RunOptions(seeds=1)).to_dict()


def test_a_request_of_another_version_is_refused_with_what_to_do(tmp_path: Path):
    older = good_request(tmp_path)
    del older["load"]  # a command from before load options travelled: its --set would be lost
    with pytest.raises(ValueError, match=r"carries no load options .*`kerneltui engine stop`"):
        RunRequest.from_dict(older)
    with pytest.raises(ValueError, match=r"does not know \(priority\).*`kerneltui engine stop`"):
        RunRequest.from_dict({**good_request(tmp_path), "priority": 1})
    newer = good_request(tmp_path)
    newer["options"]["warm_only"] = True
    with pytest.raises(ValueError, match=r"run option\(s\) this engine does not know \(warm_only\)"):
        RunRequest.from_dict(newer)


@pytest.mark.parametrize(("load", "said"), [
    ({"backend": "torch", "constants": [], "scale": None, "sizes": 2}, "unknown load option(s) 'sizes'"),
    ({"backend": "numba"}, "backend must be one of triton"),
    ({"constants": [["N"]]}, "list of [NAME, VALUE] text pairs"),
    ({"constants": [["N", 64]]}, "list of [NAME, VALUE] text pairs"),
    ({"constants": [["not a name", "1"]]}, "list of [NAME, VALUE] text pairs"),
    ({"scale": 0}, "scale must be a positive number"),
    ({"scale": True}, "scale must be a positive number"),
    ({"scale": "0.5"}, "scale must be a positive number"),
    ("torch", "load options must be an object"),
])
def test_bad_load_options_in_a_request_are_refused(tmp_path: Path, load, said):
    with pytest.raises(ValueError, match="the run request's") as caught:
        RunRequest.from_dict({**good_request(tmp_path), "load": load})
    assert said in str(caught.value)


@pytest.mark.parametrize(("options", "said"), [
    ({"seeds": "3"}, "run option seeds must be an integer or null, not '3'"),
    ({"seeds": True}, "run option seeds must be an integer or null, not True"),
    ({"record": "false"}, "run option record must be true or false, not 'false'"),
    ({"record": 0}, "run option record must be true or false, not 0"),
    ({"timeout_s": "30"}, "run option timeout_s must be an integer or a number or null"),
    ({"rungs": "correctness"}, "run option rungs must be a list or null"),
    ({"rungs": ["correctness", 2]}, "run option rungs must be a list of rung names"),
    ({"profile": {"case": "1"}}, "run option profile.case must be an integer or null"),
    ({"profile": {"cases": 1}}, "run option profile has field(s) this version does not know: cases"),
    ({"trace": [1]}, "run option trace must be an object"),
    ({"benchmark": "fast"}, "run option benchmark must be an object"),
    ({"benchmark": {"max_seconds": "x"}}, "max_seconds"),
])
def test_run_option_values_of_the_wrong_type_are_refused(tmp_path: Path, options, said):
    # A request from another process (or another version) whose values would be read wrongly later:
    # record="false" is truthy, seeds=True is one seed.
    request = good_request(tmp_path)
    request["options"].update(options)
    with pytest.raises(ValueError, match="the run request's") as caught:
        RunRequest.from_dict(request)
    assert said in str(caught.value)


def test_settings_from_config_and_their_errors(tmp_path: Path):
    env = {"KERNELTUI_ENGINE_IDLE_S": "5", "KERNELTUI_ENGINE_DIR": str(tmp_path), "KERNELTUI_ENGINE_ENABLED": "off"}
    settings = EngineSettings.from_config(load_config(tmp_path / "none.toml", env=env))
    assert (settings.idle_s, settings.dir, settings.enabled) == (5.0, tmp_path, False)
    assert (settings.candidate_spares, settings.judge_spares) == (2, 1)
    for bad in ({"KERNELTUI_ENGINE_IDLE_S": "0"}, {"KERNELTUI_ENGINE_ENABLED": "perhaps"},
                {"KERNELTUI_ENGINE_JUDGE_SPARES": "-1"}):
        with pytest.raises(ConfigError, match=r"\[engine\]"):
            EngineSettings.from_config(load_config(tmp_path / "none.toml", env=bad))


def test_fingerprint_follows_the_workers_environment_only():
    base = {"PATH": "/usr/bin", "KERNELTUI_SESSIONS_DIR": "/a", "LANG": "C"}
    same = fingerprint(base)
    assert fingerprint({**base, "KERNELTUI_SESSIONS_DIR": "/b", "LANG": "de_DE"}) == same  # the command's own
    assert fingerprint({**base, "CUDA_VISIBLE_DEVICES": "1"}) != same
    assert fingerprint({**base, "KERNELTUI_SANDBOX_ZYGOTE": "false"}) != same  # how workers start
    # [benchmark] travels with each run (RunRequest.make): another setting is not another engine
    assert fingerprint({**base, "KERNELTUI_BENCHMARK_TORCH_COMPILE": "false"}) == same


def test_an_edited_sandbox_setting_in_the_config_file_is_another_engine(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text("[sandbox]\nenabled = true\n", encoding="utf-8")
    env = {"PATH": "/usr/bin", "KERNELTUI_CONFIG": str(config)}
    before = fingerprint(env)
    config.write_text('[sandbox]\nenabled = "false"\n', encoding="utf-8")  # the engine must not keep the old box
    assert fingerprint(env) != before
    config.write_text("[sandbox]\nenabled = true\n\n[benchmark]\nmin_runs = 20\n", encoding="utf-8")
    assert fingerprint(env) == before  # the rest of the file travels with each run


def test_a_run_request_carries_the_commands_benchmark_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = tmp_path / "config.toml"
    config.write_text("[benchmark]\nmin_runs = 20\n", encoding="utf-8")
    monkeypatch.setenv("KERNELTUI_CONFIG", str(config))
    monkeypatch.setenv("KERNELTUI_BENCHMARK_MAX_SECONDS", "3")
    sent = RunRequest.make(tmp_path, None, LoadOptions(), RunOptions(seeds=1)).run_options().benchmark
    assert sent is not None and (sent.max_seconds, sent.min_runs) == (3.0, 20)  # the environment and the file
    own = BenchSettings(max_seconds=1.0)  # a run's own settings are kept
    assert RunRequest.make(tmp_path, None, LoadOptions(), RunOptions(benchmark=own)).run_options().benchmark == own


def test_socket_path_too_long_is_said(tmp_path: Path):
    files = EngineFiles.in_dir(tmp_path / ("x" * 120))
    with pytest.raises(ConfigError, match="shorter folder"):
        files.check_socket_path()


def test_key_file_rules(tmp_path: Path):
    key_path = tmp_path / "engine.key"
    key = create_key(key_path)
    assert key_path.stat().st_mode & 0o777 == 0o600
    assert create_key(key_path) == read_key(key_path) == key  # made once, then read
    key_path.chmod(0o640)
    with pytest.raises(KeyFileError, match="chmod 600"):
        read_key(key_path)
    with pytest.raises(KeyFileError, match="no engine key"):
        read_key(tmp_path / "missing.key")


async def _pair(engine_key: bytes, client_key: bytes) -> tuple[dict, dict]:
    left, right = socket.socketpair(socket.AF_UNIX)
    engine = Channel(*await asyncio.open_unix_connection(sock=left))
    client = Channel(*await asyncio.open_unix_connection(sock=right))
    accepted = asyncio.create_task(engine.accept(engine_key, {"pid": os.getpid()}))
    try:
        hello = await client.connect(client_key, {"client_pid": 1})
        await accepted
        client.send({"op": "status"})
        engine.send({"status": {"ok": True}})
        return hello, {"engine got": await engine.receive(), "client got": await client.receive()}
    finally:
        accepted.cancel()
        await engine.close()
        await client.close()


async def test_handshake_with_the_key_then_sealed_frames():
    key = os.urandom(32)
    hello, got = await _pair(key, key)
    assert hello["hello"] == "kerneltui-engine" and hello["pid"] == os.getpid()
    assert got == {"engine got": {"op": "status"}, "client got": {"status": {"ok": True}}}


async def test_handshake_with_another_key_is_refused():
    with pytest.raises(AuthError, match="refused this client"):
        await _pair(os.urandom(32), os.urandom(32))
