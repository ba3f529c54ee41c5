"""Typed run options: what each rung is told, and where the benchmark's settings come from."""

from __future__ import annotations

import json

import pytest

from kerneltui.config import benchmark_settings, load_config
from kerneltui.core.rungs import benchmark
from kerneltui.core.rungs.context import ProfileOptions, RunContext, RunOptions, TraceOptions
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.parent.pool import WorkerPool
from kerneltui.settings.bench import BenchSettings
from tests.conftest import EXAMPLES


def test_options_cross_json_and_come_back_typed():
    options = RunOptions(rungs=["profile"], override_folder=".kerneltui/override/abc",
                         benchmark=BenchSettings(max_seconds=1.5, torch_compile=False),
                         profile=ProfileOptions(case=1, kernel_name="add.*", launch_count=2, timeout_s=30.0),
                         trace=TraceOptions(case=0, reps=5))
    back = RunOptions.from_dict(json.loads(json.dumps(options.to_dict())))
    assert back == options
    assert isinstance(back.benchmark, BenchSettings) and isinstance(back.profile, ProfileOptions)
    assert RunOptions.from_dict({"seeds": 2, "from_a_newer_version": 1}) == RunOptions(seeds=2)


def test_a_wrong_benchmark_setting_across_the_socket_is_refused():
    with pytest.raises(ValueError, match="unknown \\[benchmark\\] setting 'max_s'"):
        RunOptions.from_dict({"benchmark": {"max_s": 2}})


def test_configured_benchmark_settings_layer_file_env_and_overrides(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text("[benchmark]\nmax_seconds = 3.0\nmin_runs = 20\n", encoding="utf-8")
    config = load_config(cfg, env={"KERNELTUI_BENCHMARK_MIN_RUNS": "30"})
    settings = benchmark_settings(config, overrides={"torch_compile": False})
    assert (settings.max_seconds, settings.min_runs, settings.torch_compile) == (3.0, 30, False)
    with pytest.raises(ValueError, match="graph must be one of"):
        benchmark_settings(config, overrides={"graph": "sometimes"})


def _context(options: RunOptions) -> RunContext:
    task = load_task(str(EXAMPLES / "vector_add"))
    return RunContext(task=task, source="", files={}, options=options, pool=WorkerPool("torch"), run_id="r",
                      emit=lambda event: None, source_hash="h", version_dir=task.state_dir,
                      configured_benchmark=lambda: BenchSettings(max_seconds=7.0))


def test_the_benchmark_rung_takes_the_runs_settings_else_the_loops():
    assert benchmark.load_settings(_context(RunOptions())).max_seconds == 7.0
    own = BenchSettings(max_seconds=0.5)
    assert benchmark.load_settings(_context(RunOptions(benchmark=own))) is own


def test_the_benchmark_rung_reads_no_config_itself():
    source = benchmark.__file__
    with open(source, encoding="utf-8") as f:
        text = f.read()
    assert "load_config" not in text and "register_defaults" not in text


def test_a_failed_worker_request_becomes_one_kind_of_failed_rung():
    from kerneltui.core.rungs.result import SourceLocation
    from kerneltui.core.worker.parent.process import WorkerFailure

    exc = WorkerFailure("error", "index out of range", error={"file": "kernel.py", "line": 12, "traceback": "tb\n"})
    result = _context(RunOptions()).failure("run", exc)
    assert (result.status, result.summary, result.location) == ("fail", "index out of range",
                                                                 SourceLocation("kernel.py", 12))
    assert result.details == "tb\n" and result.metrics == {"failure": "error"}
    worded = _context(RunOptions()).failure("benchmark", WorkerFailure("timeout", "no answer after 5 s"),
                                            message="timing the kernel: no answer after 5 s")
    assert worded.summary == "timing the kernel: no answer after 5 s" and worded.location is None
    assert worded.metrics == {"failure": "timeout"}


def test_a_run_handed_to_a_ray_node_carries_this_commands_benchmark_settings(tmp_path, monkeypatch):
    from kerneltui.core.remote.ray_runner import node_options

    config = tmp_path / "config.toml"
    config.write_text("[benchmark]\nmin_runs = 20\n", encoding="utf-8")
    monkeypatch.setenv("KERNELTUI_CONFIG", str(config))
    monkeypatch.setenv("KERNELTUI_BENCHMARK_MAX_SECONDS", "3")
    sent = RunOptions.from_dict(node_options(RunOptions(seeds=1, kernel_source="x = 1\n")))
    assert sent.kernel_source is None and sent.seeds == 1
    assert sent.benchmark is not None and (sent.benchmark.max_seconds, sent.benchmark.min_runs) == (3.0, 20)
    own = BenchSettings(max_seconds=1.0)
    assert RunOptions.from_dict(node_options(RunOptions(benchmark=own))).benchmark == own
