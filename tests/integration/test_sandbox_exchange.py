"""What a boxed worker sees of other runs and of the judge: exchange folders it cannot list or
guess, and compile caches of the judge it cannot write. Each runs real code in a real box (a
supervisor, Landlock) the way a worker's is made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltui.core.sandbox.box import open_box
from kerneltui.core.sandbox.environment import judge_caches, shared_caches
from kerneltui.core.sandbox.settings import SandboxSettings
from kerneltui.core.sandbox.support import support
from kerneltui.core.worker.contract import wire

MEASURED = support()
needs_landlock = pytest.mark.skipif(not MEASURED.landlock_abi, reason=f"no Landlock here: {MEASURED.landlock_why}")

PROBE = """
import json, os, sys
seen = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        if name.startswith("list "):
            seen[name] = sorted(os.listdir(path))[:3]
        else:
            with open(path, "w") as f:
                f.write("planted")
            seen[name] = "written"
    except OSError as exc:
        seen[name] = f"refused ({exc.strerror})"
print(json.dumps(seen))
"""


def run_in_box(probes: dict[str, str], role: str, tmp_path: Path) -> dict[str, object]:
    root = wire.exchange_root(create=True)
    box = open_box(SandboxSettings(), MEASURED, python=sys.executable, lifeline=False, writable=[str(root)], role=role)
    try:
        proc = subprocess.run(box.argv([sys.executable, "-c", PROBE, json.dumps(probes)]), env=box.env,
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
    finally:
        box.release()
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_each_run_folder_has_a_name_no_one_can_guess() -> None:
    names = {wire.new_run_folder().name for _ in range(64)}
    assert len(names) == 64
    assert all(len(n) == 32 and int(n, 16) >= 0 for n in names)  # 128 random bits


@needs_landlock
def test_a_box_cannot_list_shared_memory_or_other_runs_exchange_folders(tmp_path: Path) -> None:
    other_run = wire.new_run_folder()
    other_run.mkdir(mode=0o700, parents=True)
    (other_run / "j1-k1").write_bytes(b"\0" * 16)
    try:
        seen = run_in_box({"list /dev/shm": "/dev/shm", "list the exchange root": str(wire.exchange_root()),
                           "list another run's folder": str(other_run)}, "candidate", tmp_path)
    finally:
        (other_run / "j1-k1").unlink()
        other_run.rmdir()
    for name, what in seen.items():
        assert str(what).startswith("refused"), (name, what)


@needs_landlock
def test_a_candidates_box_cannot_write_the_caches_the_judge_compiles_into(tmp_path: Path) -> None:
    caches = {c.variable: c.path for c in shared_caches(os.environ)}
    own = {c.variable: c.path for c in judge_caches(shared_caches(os.environ))}
    inductor_judge = own["TORCHINDUCTOR_CACHE_DIR"]
    inductor_shared = caches["TORCHINDUCTOR_CACHE_DIR"]
    # The judge's box makes and may write its own cache; a candidate's may write only the shared one.
    judge = run_in_box({"judge's cache": os.path.join(inductor_judge, "probe-judge.txt")}, "judge", tmp_path)
    assert judge == {"judge's cache": "written"}
    candidate = run_in_box({"judge's cache": os.path.join(inductor_judge, "planted.py"),
                            "shared cache": os.path.join(inductor_shared, "probe-candidate.txt")}, "candidate", tmp_path)
    assert str(candidate["judge's cache"]).startswith("refused"), candidate
    assert candidate["shared cache"] == "written", "control: the candidate's box writes the shared cache"
    for leftover in (os.path.join(inductor_judge, "probe-judge.txt"), os.path.join(inductor_shared, "probe-candidate.txt")):
        Path(leftover).unlink(missing_ok=True)


def test_the_judges_caches_lie_beside_the_shared_ones_never_beneath() -> None:
    shared = shared_caches(os.environ)
    own = judge_caches(shared)
    assert [c.variable for c in own] == [c.variable for c in shared]
    written = [os.path.join(c.path, "cuda") if c.variable == "KERNELTUI_CACHE_DIR" else c.path for c in shared]
    for cache in own:
        mine = os.path.join(cache.path, "cuda") if cache.variable == "KERNELTUI_CACHE_DIR" else cache.path
        assert not any(mine == w or mine.startswith(w.rstrip("/") + "/") for w in written), (cache, written)


def test_the_judge_points_the_libraries_at_its_own_caches() -> None:
    from kerneltui.core.worker.child.ops_judge import use_own_caches

    saved = dict(os.environ)
    try:
        use_own_caches()
        for cache in judge_caches(shared_caches(saved)):
            assert os.environ[cache.variable] == cache.path
    finally:
        os.environ.clear()
        os.environ.update(saved)
