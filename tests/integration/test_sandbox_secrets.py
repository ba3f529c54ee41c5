"""No secret gets out through candidate code. API keys are planted in kerneltui's environment and an
SSH key in its home; a kernel prints its environment, the key file and its ancestors' environments,
and fails with all of it in its error. Afterwards no file kerneltui wrote (the task's .kerneltui/, the
cache, data and config folders, the session, an export) and no tool output the model received holds
any piece of a planted secret, with the box on (they never reach the kernel) and off (they are
redacted on the way to storage)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kerneltui.core.agent.chat import AgentChat
from kerneltui.core.remote.ssh import SSHRunner, SSHTarget
from kerneltui.core.sandbox.support import support
from tests.conftest import ROOT, run_cli
from tests.integration.agent_helpers import make_chat
from tests.integration.sandbox_helpers import PLANTED_ENV, files_holding, leaky_kernel, plant_home

BOX = pytest.mark.parametrize("enabled", ["true", "false"], ids=["box-on", "box-off"])


@BOX
def test_planted_secrets_are_in_no_file_kerneltui_wrote(example_task, tmp_path, enabled):
    home = tmp_path / "home"
    key = plant_home(home)
    task = example_task("vector_add")
    (task / "prints.py").write_text(leaky_kernel(key, raise_it=False))
    (task / "raises.py").write_text(leaky_kernel(key, raise_it=True))
    folders = {name: tmp_path / name for name in ("data", "cache", "config", "sessions", "export")}
    env = {**PLANTED_ENV, "HOME": str(home), "KERNELTUI_SANDBOX_ENABLED": enabled,
           "KERNELTUI_DATA_DIR": str(folders["data"]), "KERNELTUI_CACHE_DIR": str(folders["cache"]),
           "KERNELTUI_CONFIG_DIR": str(folders["config"]), "KERNELTUI_SESSIONS_DIR": str(folders["sessions"])}

    passed = run_cli("check", str(task), "--kernel", str(task / "prints.py"), "--rungs", "correctness", "--seeds", "1",
                     "--json", env=env)
    assert passed.returncode == 0, passed.stderr[-2000:]
    failed = run_cli("check", str(task), "--kernel", str(task / "raises.py"), "--rungs", "compile", "--json", env=env)
    assert failed.returncode == 1, failed.stderr[-2000:]
    compile_rung = next(r for r in json.loads(failed.stdout)["rungs"] if r["name"] == "compile")
    assert "LEAK" in compile_rung["error"]
    exported = run_cli("export", "latest", "--out", str(folders["export"]), env=env)
    assert exported.returncode == 0, exported.stderr[-2000:]

    history = task / ".kerneltui" / "history.sqlite"
    assert history.exists() and any(folders["sessions"].iterdir()) and any(folders["export"].glob("*.md"))
    written = [task / ".kerneltui", *folders.values()]
    # The kernel's output was stored (so a secret in it would be found), with nothing of the secrets.
    assert files_holding(written, b"LEAK"), "the kernel's output was stored nowhere: the test sees nothing"
    leaks = files_holding(written, b"PLANTED")
    assert leaks == [], f"planted secrets in {leaks}"
    if enabled == "true" and support().landlock_abi:
        # The box kept the kernel from the key file and from kerneltui's environment.
        assert files_holding([history.parent], b"unreadable: [Errno 13] Permission denied")
    else:  # the kernel read them: redaction removed them on the way to the files
        assert files_holding([history.parent], b"[redacted]")


@BOX
async def test_tool_output_the_model_reads_carries_no_secret(example_task, tmp_path, monkeypatch, enabled):
    for name, value in PLANTED_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KERNELTUI_SANDBOX_ENABLED", enabled)
    key = plant_home(tmp_path / "home")
    source = leaky_kernel(key, raise_it=True)
    turns = [{"tool_calls": [{"name": "run_candidate", "arguments": {"source": source, "rungs": ["compile"]}}]},
             {"text": "done"}]
    session, recorder, provider = make_chat(example_task("vector_add"), turns, tmp_path)
    assert isinstance(session, AgentChat)
    try:
        await session.send("try this kernel")
    finally:
        await session.close()
    result = provider.requests[1].messages[-1].tool_results[0].content
    assert "LEAK" in result, result[:2000]
    assert "PLANTED" not in result
    assert all("PLANTED" not in getattr(e, "output", "") + getattr(e, "summary", "") for e in recorder.events)
    if enabled == "false" or not support().landlock_abi:
        assert "[redacted]" in result  # the kernel read the key file; the tool output went through redaction


def test_a_worker_over_ssh_gets_the_same_allow_list(tmp_path):
    """The remote side of SSHRunner, run here as the remote shell would: the supervisor scrubs the
    login environment (keys exported in ~/.bashrc) and keeps the variables the target names."""
    runner = SSHRunner(SSHTarget(host="gpu-box", env={"MY_REMOTE_VAR": "kept"}))
    request = runner._here_policy([])
    login_env = {**PLANTED_ENV, "PATH": os.environ["PATH"], "HOME": str(tmp_path), "MY_REMOTE_VAR": "kept",
                 "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    show = "import os, json; print(json.dumps(dict(os.environ)))"
    proc = subprocess.run([sys.executable, "-m", "kerneltui.core.sandbox.launch", "--here", request, "--",
                           sys.executable, "-c", show], env=login_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert "PLANTED" not in proc.stdout and seen["MY_REMOTE_VAR"] == "kept"
    assert seen["HOME"].startswith(str(tmp_path / "kerneltui-worker-"))
    assert proc.stderr.startswith("kerneltui sandbox on ")  # what the box there holds, for the parent's log
    assert not any(tmp_path.glob("kerneltui-worker-*")), "the remote scratch folder was left behind"
