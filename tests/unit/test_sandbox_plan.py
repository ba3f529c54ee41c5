"""The sandbox's decisions, without starting a worker: the environment allow-list, the filesystem
rules, which parts are on and what is said about the ones that are off, the settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kerneltui.config import ConfigError
from kerneltui.core.sandbox import reaper
from kerneltui.core.sandbox.box import decide, sealed_folders
from kerneltui.core.sandbox.environment import SCRATCH_ENV, worker_environment
from kerneltui.core.sandbox.filesystem import FilesystemPlan, read_rules
from kerneltui.core.sandbox.landlock import READ
from kerneltui.core.sandbox.policy import BoxPlan, LaunchPolicy, sandbox_note
from kerneltui.core.sandbox.settings import SandboxSettings
from kerneltui.core.sandbox.support import SandboxSupport

PARENT_ENV = {
    "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPATH": "/src", "HOME": "/home/me",
    "CUDA_VISIBLE_DEVICES": "1", "TRITON_INTERPRET": "1", "NVIDIA_VISIBLE_DEVICES": "all", "TORCH_LOGS": "+dynamo",
    "OPENAI_API_KEY": "sk-0123456789abcdef", "ANTHROPIC_API_KEY": "sk-ant-0123456789", "HF_TOKEN": "hf_0123456789ab",
    "AWS_SECRET_ACCESS_KEY": "abcdefghijklmnop", "DB_PASSWORD": "hunter22hunter22", "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
    "KERNELTUI_AGENT_API_KEY": "kt-0123456789ab", "KERNELTUI_CONFIG_DIR": "/home/me/.config/kerneltui",
    "GITHUB_TOKEN": "ghp_0123456789abcdef", "EDITOR": "vim", "CUDA_PROFILE_TOKEN_PASSTHRU": "x",
    "TRITON_ALIAS": "hunter22hunter22",  # an allowed name whose value is a secret's
}


def test_the_environment_is_an_allow_list_without_credentials() -> None:
    plan = worker_environment(PARENT_ENV, scratch="/tmp/kerneltui-worker-x", extra={"CUDA_VISIBLE_DEVICES": "3"},
                              pass_env=["EDITOR", "GITHUB_TOKEN"])
    env = plan.env
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                 "SSH_AUTH_SOCK", "KERNELTUI_AGENT_API_KEY", "GITHUB_TOKEN", "KERNELTUI_CONFIG_DIR",
                 "CUDA_PROFILE_TOKEN_PASSTHRU", "TRITON_ALIAS"):
        assert name not in env, name
    assert plan.refused == ("GITHUB_TOKEN",)  # asked for by pass_env, refused as a credential
    assert env["EDITOR"] == "vim" and env["CUDA_VISIBLE_DEVICES"] == "3" and env["TRITON_INTERPRET"] == "1"
    assert env["LC_ALL"] == "C.UTF-8" and env["PYTHONPATH"] == "/src" and env["TORCH_LOGS"] == "+dynamo"
    assert env["HOME"] == "/tmp/kerneltui-worker-x/home" and env["TMPDIR"] == "/tmp/kerneltui-worker-x/tmp"
    assert env[SCRATCH_ENV] == "/tmp/kerneltui-worker-x"
    # The compile caches stay where they are for kerneltui, not in the scratch home.
    assert env["TRITON_CACHE_DIR"] == "/home/me/.triton/cache"
    assert env["KERNELTUI_CACHE_DIR"] == "/home/me/.cache/kerneltui"
    assert not any(v.startswith("/tmp/kerneltui-worker-x") for k, v in env.items()
                   if k.endswith("CACHE_DIR"))


def test_filesystem_rules_hide_a_home_but_reopen_what_python_needs(tmp_path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / "venv").mkdir()
    (tmp_path / "beside").mkdir()
    (tmp_path / "link-into-home").symlink_to(home / ".ssh")
    rules = {r.path: r.access for r in read_rules([str(home)], [str(home / "venv")])}
    # Nothing granted on / itself: a listing there would cover every folder beneath it (the temp
    # folder's scratch folders, /dev/shm's exchange folders).
    assert "/" not in rules
    assert rules[str(tmp_path / "beside")] == READ and rules[str(home / "venv")] == READ
    assert str(home) not in rules and str(home / ".ssh") not in rules
    assert str(tmp_path / "link-into-home") not in rules
    assert not any(p.startswith(str(home) + "/") and p != str(home / "venv") for p in rules)


def test_a_sealed_folder_stays_unreadable_under_a_readable_path_that_holds_it(tmp_path) -> None:
    # The engine's folder as the engine's working folder, an import path every box is granted (#47).
    work = tmp_path / "work"
    engine = work / "engine"
    (engine / "inner").mkdir(parents=True)
    (work / "pkg").mkdir()
    (work / "mod.py").write_text("")
    (work / "link-to-engine").symlink_to(engine)
    rules = {r.path: r.access for r in read_rules([str(tmp_path / "home")], [str(work), str(engine / "inner")],
                                                  sealed=[str(engine)])}
    assert rules[str(work / "pkg")] == READ and rules[str(work / "mod.py")] == READ
    assert str(work) not in rules and str(engine) not in rules and str(engine / "inner") not in rules
    assert str(work / "link-to-engine") not in rules
    assert not any(p.startswith(str(engine) + "/") for p in rules)
    # Not sealed, a readable path is granted whole, as before.
    assert read_rules([], [str(work)])[-1].path == str(work)


def test_every_box_seals_the_engines_folders(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KERNELTUI_ENGINE_DIR", str(tmp_path / "engine"))
    # Made before the box if missing: one made later beneath a granted folder would be readable.
    folders = sealed_folders()
    assert str(tmp_path / "engine") in folders and (tmp_path / "engine").stat().st_mode & 0o777 == 0o700
    plan, _ = decide_for(SandboxSettings(), support(), sealed=folders)
    assert plan is not None and plan.filesystem is not None
    assert str(tmp_path / "engine") in plan.filesystem.sealed
    assert str(tmp_path / "engine") in plan.filesystem.hidden


def test_kerneltuis_cache_folder_is_hidden_but_its_cuda_builds(tmp_path, monkeypatch) -> None:
    # A cache folder outside the home (XDG_CACHE_HOME, KERNELTUI_CACHE_DIR) is not hidden with it.
    cache = tmp_path / "cache"
    (cache / "cuda").mkdir(parents=True)
    (cache / "context-index").mkdir()
    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(cache))
    plan, _ = decide_for(SandboxSettings(), support(), caches=[str(cache / "cuda")])
    assert plan is not None and plan.filesystem is not None
    assert str(cache) in plan.filesystem.hidden and str(cache / "cuda") in plan.filesystem.writable
    rules = {r.path for r in read_rules(plan.filesystem.hidden, plan.filesystem.readable, plan.filesystem.sealed)}
    assert not any(p == str(cache) or p.startswith(str(cache) + "/") for p in rules)


def support(**changes: object) -> SandboxSupport:
    full = dict(landlock_abi=7, network="namespace", cgroup_base="/sys/fs/cgroup", capabilities=True, root=True)
    full.update(changes)
    return SandboxSupport(**full)  # type: ignore[arg-type]


def decide_for(settings: SandboxSettings, measured: SandboxSupport, **kwargs: object):
    env = worker_environment(PARENT_ENV, scratch="/tmp/kerneltui-worker-x")
    return decide(settings, measured, scratch="/tmp/kerneltui-worker-x", env=env, python="/usr/bin/python3",
                  **kwargs)  # type: ignore[arg-type]


def test_a_full_box_is_said_to_be_on() -> None:
    plan, state = decide_for(SandboxSettings(), support(), cgroup_made="/sys/fs/cgroup/kerneltui-1-1")
    assert plan is not None and plan.network == "namespace" and plan.landlock_abi == 7 and plan.drop_capabilities
    assert plan.address_space == 64 * 2**30 and plan.filesystem is not None
    assert "/tmp/kerneltui-worker-x" in plan.filesystem.writable and "/dev/shm" in plan.filesystem.unlisted
    assert all(p.on for p in state.parts) and sandbox_note(state) == ""


def test_missing_parts_are_said_with_the_reason() -> None:
    measured = support(landlock_abi=0, landlock_why="the kernel has no Landlock", network="",
                       network_why="no user namespaces for this user", cgroup_base="",
                       cgroup_why="no cgroup v2 hierarchy is mounted", capabilities=False, root=False)
    plan, state = decide_for(SandboxSettings(), measured)
    assert plan is not None and plan.network == "" and plan.filesystem is None
    assert sandbox_note(state) == "sandbox partial: no network, filesystem (kerneltui doctor says why)"
    parts = {p.name: p for p in state.parts}
    assert parts["network"].detail == "no user namespaces for this user"
    assert parts["filesystem"].detail.startswith("the kernel has no Landlock; ")
    assert "no cgroup v2 hierarchy is mounted" in parts["processes"].detail and parts["processes"].on


def test_folder_watches_are_denied_where_the_filter_works_and_said_where_not() -> None:
    plan, state = decide_for(SandboxSettings(), support(watches_why=""))
    assert plan is not None and plan.deny_watches
    assert "folder watches (inotify, fanotify) denied by seccomp" in state.part("filesystem").detail  # type: ignore[union-attr]
    plan, state = decide_for(SandboxSettings(), support(watches_why="no table of the watch calls' numbers for riscv64"))
    assert plan is not None and not plan.deny_watches
    assert "not denied: no table of the watch calls' numbers for riscv64" in state.part("filesystem").detail  # type: ignore[union-attr]


def test_landlock_alone_still_denies_tcp() -> None:
    _, state = decide_for(SandboxSettings(), support(network="", network_why="unshare failed", landlock_abi=4))
    network = state.part("network")
    assert network is not None and network.on and "TCP connect and bind denied by Landlock" in network.detail


def test_the_box_off_is_stated_and_capabilities_kept_for_ncu() -> None:
    plan, state = decide_for(SandboxSettings(enabled=False), support())
    assert plan is None and sandbox_note(state) == "sandbox off ([sandbox] enabled = false)"
    assert state.part("environment").on and state.part("processes").on  # type: ignore[union-attr]
    plan, state = decide_for(SandboxSettings(), support(), keep_capabilities="kept for ncu")
    assert plan is not None and not plan.drop_capabilities
    assert sandbox_note(state) == "sandbox partial: no capabilities (kerneltui doctor says why)"


def test_settings_are_checked() -> None:
    assert SandboxSettings.from_mapping({"pass_env": "A, B C"}).pass_env == ("A", "B", "C")
    with pytest.raises(ConfigError, match="no setting nework"):
        SandboxSettings.from_mapping({"nework": False})
    with pytest.raises(ConfigError, match="enabled must be true or false"):
        SandboxSettings.from_mapping({"enabled": "no"})
    with pytest.raises(ConfigError, match="zygote_on_gpu must be true or false"):
        SandboxSettings.from_mapping({"zygote_on_gpu": "yes"})
    assert SandboxSettings.from_mapping({}).zygote_on_gpu is True
    assert SandboxSettings.from_mapping({"zygote_on_gpu": False}).zygote_on_gpu is False
    with pytest.raises(ConfigError, match="open_files must be a whole number"):
        SandboxSettings.from_mapping({"open_files": -1})


def test_the_policy_survives_its_trip_to_the_supervisor() -> None:
    fs = FilesystemPlan(("/home/me",), ("/home/me/venv",), ("/tmp/x",), ("/dev/null",), ("/run/user/1/kerneltui",))
    policy = LaunchPolicy(parent_pid=1, scratch="/tmp/x", cgroup="/sys/fs/cgroup/k", lifeline_fd=5,
                          box=BoxPlan(network="namespace", landlock_abi=7, filesystem=fs, address_space=2**30))
    assert LaunchPolicy.from_json(policy.to_json()) == policy
    assert LaunchPolicy.from_json(LaunchPolicy(2, "/tmp/y").to_json()).box is None


def test_descendants_are_children_and_their_children() -> None:
    import time

    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30; true"])
    try:
        deadline = time.monotonic() + 10
        while len(reaper.descendants(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        below = reaper.descendants(proc.pid)
        assert len(below) == 2 and proc.pid in reaper.descendants(os.getpid())
        assert all(p in reaper.descendants(os.getpid()) for p in below)
    finally:
        for pid in reaper.descendants(proc.pid):
            os.kill(pid, 9)
        proc.kill()
        proc.wait()


def test_no_address_space_cap_by_default_where_a_gpu_is() -> None:
    """With unified addressing every CUDA allocation also takes its size of the process's address
    space: the 64 GiB cap failed honest kernels using more of an H200's 141 GiB ("CUDA error: out of
    memory"). On a GPU machine there is none unless set; a setting still wins; CPU machines keep it."""
    plan, state = decide_for(SandboxSettings(), support(gpu=True))
    assert plan is not None and plan.address_space == 0
    limits = next(p for p in state.parts if p.name == "limits")
    assert limits.on and "address space unlimited (a GPU machine" in limits.detail
    plan, _ = decide_for(SandboxSettings(address_space_gib=200), support(gpu=True))
    assert plan is not None and plan.address_space == 200 * 2**30
    plan, state = decide_for(SandboxSettings(), support(gpu=False))
    assert plan is not None and plan.address_space == 64 * 2**30
    assert "address space 64 GiB" in next(p for p in state.parts if p.name == "limits").detail


def test_python_m_from_the_home_folder_does_not_open_it_to_the_box(tmp_path) -> None:
    """`python -m …` puts the working folder first on the import path; started from the home folder,
    granting that path would let every box read the person's keys and config."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "probe_paths.py").write_text(
        "import json, os, sys\n"
        "from kerneltui.core.sandbox.box import package_root, python_paths\n"
        "print(json.dumps({'paths': python_paths(os.environ, sys.executable), 'first': sys.path[0],\n"
        "                  'root': package_root()}))\n")
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": os.pathsep.join([str(home), checkout])}
    out = subprocess.run([sys.executable, "-m", "probe_paths"], cwd=home, env=env, capture_output=True,
                         text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert os.path.abspath(found["first"]) == str(home)  # the case: the home folder first on the path
    assert str(home) not in found["paths"]
    assert str(tmp_path) not in found["paths"] and "/" not in found["paths"]
    assert found["root"] in found["paths"]  # kerneltui itself stays readable
