"""Shared fixtures. GPU tests (marked ``gpu``) are skipped on machines without a CUDA device."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "kerneltui" / "examples"
DATA = Path(__file__).resolve().parent / "data"


def _has_gpu() -> bool:
    if os.environ.get("KERNELTUI_ASSUME_NO_GPU") == "1":
        return False
    if shutil.which("nvidia-smi") is None and not Path("/dev/nvidia0").exists():
        return False
    # Ask torch in a subprocess: the test process itself should not have to import torch.
    probe = subprocess.run([sys.executable, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
                           capture_output=True)
    return probe.returncode == 0


HAS_GPU = _has_gpu()

# Commands under test run their own workers, also those that module- and session-scoped fixtures
# run: no background engine is started in the user's folders. tests/integration/test_engine.py
# turns the engine on for itself, with a folder of its own.
os.environ["KERNELTUI_ENGINE_ENABLED"] = "0"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _one_worker_per_module_fixture(items)
    if HAS_GPU:
        _longest_first(items)
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def _longest_first(items: list[pytest.Item]) -> None:
    """The GPU tests marked ``runs_long(seconds)`` go first, longest first, the rest keep their order.

    pytest-xdist hands tests out in collection order: a 90 s test that starts when the others are
    nearly done sets the end of the whole run (seen on an H100: 12 workers, 1,640 s of tests, the
    step ~25 s past its even share). Longest first is the classic answer to that."""
    def seconds(item: pytest.Item) -> float:
        marker = item.get_closest_marker("runs_long")
        return float(marker.args[0]) if marker is not None and marker.args else 0.0

    items.sort(key=lambda item: -seconds(item))  # stable: equal ones keep the collection order


def _one_worker_per_module_fixture(items: list[pytest.Item]) -> None:
    """Tests that use a module-scoped fixture run in one pytest-xdist worker (``--dist loadgroup``).

    Such a fixture is made once per worker that runs one of its tests: a check of a whole task, a
    worker subprocess, a Ray cluster, an ahead-of-time compile (5-12 s each). Spread over two workers
    it was made twice, at the cost of the suite's wall time. Tests with a group of their own keep it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = getattr(info, "name2fixturedefs", {}) or {}
        if any(d.scope == "module" for chain in defs.values() for d in chain):
            item.add_marker(pytest.mark.xdist_group(name=f"module:{item.nodeid.split('::', 1)[0]}"))


@pytest.fixture(autouse=True)
def _sessions_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session logs written by the app and the commands under test stay in the test's folder."""
    monkeypatch.setenv("KERNELTUI_SESSIONS_DIR", str(tmp_path / "sessions"))


@pytest.fixture(scope="session")
def shared_engine() -> Iterator[dict[str, str]]:
    """The environment of an engine shared by the command-line checks of one test process, as a
    person's shell shares the one their commands start: each check is a real ``kerneltui check``
    answered by warm workers instead of a new interpreter importing torch and starting its own.
    The engine starts with the first check that uses it and is stopped, with its workers, at the end
    of the test process. Tests of what a command does without an engine keep the default (none)."""
    from tests.engine_helpers import end_engines_in

    folder = Path(tempfile.mkdtemp(prefix="kts-", dir="/tmp"))  # a Unix socket path must stay short
    env = {"KERNELTUI_ENGINE_ENABLED": "1", "KERNELTUI_ENGINE_DIR": str(folder), "KERNELTUI_ENGINE_IDLE_S": "1800"}
    yield env
    end_engines_in(folder, env)


@pytest.fixture
def commands_share_an_engine(shared_engine: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's commands use the process's shared engine (``pytestmark =
    pytest.mark.usefixtures("commands_share_an_engine")`` in a file of many short checks); a check's
    report through the engine is the report without it (tests/integration/test_engine.py)."""
    for name, value in shared_engine.items():
        monkeypatch.setenv(name, value)


def copy_tree(src: Path, dest: Path) -> Path:
    """A task or problem folder copied for a test, without what earlier runs left in it."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    return dest


@pytest.fixture
def example_task(tmp_path: Path):
    """Copy a bundled example into a temp dir and return its path: ``example_task("vector_add")``."""

    def make(name: str, kernel_text: str | None = None, kernel_name: str | None = None) -> Path:
        dest = copy_tree(EXAMPLES / name, tmp_path / name)
        if kernel_text is not None:
            (dest / (kernel_name or "kernel.py")).write_text(kernel_text)
        return dest

    return make


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real ``kerneltui`` command line in a subprocess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "kerneltui", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env=full_env)


_IN_XDIST_WORKER = False  # set by pytest_configure: this process runs tests for a pytest-xdist controller


def pytest_configure(config: pytest.Config) -> None:
    global _IN_XDIST_WORKER
    _IN_XDIST_WORKER = hasattr(config, "workerinput")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With KERNELTUI_TEST_LOG set, each test's outcome (and a failure's traceback) is appended to that
    file as soon as the test ends: a GPU run cut off by its time limit before pytest's summary still
    says why each test failed (bench/gpu_all.sh sets it)."""
    path = os.environ.get("KERNELTUI_TEST_LOG")
    if not path or (report.when != "call" and not report.failed):
        return
    if _IN_XDIST_WORKER:
        # Under pytest-xdist the controller receives every worker's reports and calls this hook again:
        # only the controller (or a run without xdist) writes, so each test has one line.
        return
    import time

    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"{time.strftime('%H:%M:%S')} {report.outcome.upper()} {report.nodeid} ({report.when}, "
                 f"{report.duration:.1f} s)\n")
        if report.failed:
            fh.write(report.longreprtext + "\n\n")


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """``where`` on a tmpfs of ``size`` (``64k``, ``1m``) of its own, for writes that run out of space
    (ENOSPC). Mounting needs root (a container's CI runs as root); elsewhere the test is skipped and the
    file-size limit tests (``RLIMIT_FSIZE``) cover the same path."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or 'not root'}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 64 KiB tmpfs of its own (``small_tmpfs``)."""
    with small_tmpfs(tmp_path / "small_disk", "64k") as folder:
        yield folder


def fill_disk(folder: Path) -> None:
    """Fill the file system under ``folder`` until a write fails (unbuffered, so the failure is here)."""
    with open(folder / "filler", "wb", buffering=0) as handle:
        while True:
            try:
                handle.write(b"\0" * 1024)
            except OSError:
                break
