"""``kerneltui check TASK --kernels …`` on this machine: the ranked table, and usage errors that say what to do."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EXAMPLES, run_cli

GOOD = (EXAMPLES / "vector_add" / "kernel.py").read_text()


def test_usage_errors_say_what_to_do(tmp_path: Path) -> None:
    task = str(EXAMPLES / "vector_add")
    cases = [
        (["check", task, "--ray", "auto"], "--ray and -j go with --kernels"),
        (["check", task, "--kernels", str(tmp_path / "none*.py")], "no file matches it as a glob"),
        (["check", task, "--kernels", str(tmp_path), "-j", "0"], "-j must be at least 1"),
        (["check", task, "--kernels", str(tmp_path), "--kernel", "k.py"], "either --kernel FILE"),
        (["--remote-python", "/opt/py", "check", task], "--remote-python needs --gpu-host"),
        (["--gpu-host=-oProxyCommand=x", "check", task], "not a host"),
    ]
    for argv, message in cases:
        proc = run_cli(*argv, timeout=60)
        assert proc.returncode == 2, (argv, proc.stdout, proc.stderr)
        assert message in proc.stderr, (argv, proc.stderr)


def test_local_batch_prints_a_ranked_table(tmp_path: Path) -> None:
    kernels = tmp_path / "candidates"
    kernels.mkdir()
    (kernels / "a_crash.py").write_text("import os\nimport signal\n\n\ndef custom_kernel(x, y):\n"
                                        "    os.kill(os.getpid(), signal.SIGABRT)\n")
    (kernels / "b_good.py").write_text(GOOD)
    proc = run_cli("check", str(EXAMPLES / "vector_add"), "--kernels", str(kernels / "*.py"), "--rungs",
                   "correctness", "--seeds", "1", "--no-history", "-j", "2", timeout=240)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("#  kernel"))
    first, second = lines[header + 1], lines[header + 2]
    assert "b_good.py" in first and "correct" in first
    assert "a_crash.py" in second and "FAILED" in second and "SIGABRT" in second
    assert "1/2 correct" in proc.stdout
    assert "cpu 0" in proc.stdout and "cpu 1" in proc.stdout  # two slots without a GPU (-j 2)
