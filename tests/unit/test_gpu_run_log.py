"""The log of test outcomes a GPU run writes as it goes (``KERNELTUI_TEST_LOG``, set by
bench/gpu_all.sh): one line per test, also when pytest-xdist runs the tests in several processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytest.importorskip("xdist")

TESTS = '''
def test_one():
    pass

def test_two():
    pass

def test_three():
    assert 1 + 1 == 3, "wrong on purpose"
'''


def test_each_test_is_logged_once_under_xdist(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_configure, pytest_runtest_logreport  # noqa: F401\n")
    (tmp_path / "test_sample.py").write_text(TESTS)
    log = tmp_path / "tests.log"
    env = dict(os.environ, KERNELTUI_TEST_LOG=str(log), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "test_sample.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in log.read_text().splitlines() if " test_sample.py::" in line]
    outcomes = sorted(line.split()[1] + " " + line.split()[2] for line in lines)
    assert outcomes == ["FAILED test_sample.py::test_three", "PASSED test_sample.py::test_one",
                        "PASSED test_sample.py::test_two"], log.read_text()
    assert log.read_text().count("wrong on purpose") >= 1
