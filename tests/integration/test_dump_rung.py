"""The dump rung end to end on the CPU: a real worker runs the examples under the Triton
interpreter, compiles them ahead of time for sm_90a, and the parent disassembles with the
nvdisasm that ships with Triton; then `kerneltui asm` reads the result."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kerneltui.core.asm.store import Dump
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import EXAMPLES, copy_tree, run_cli
from tests.rung_metric_keys import undeclared

STAGES = {"triton": {"ttir", "ttgir", "llir", "ptx", "sass"}, "cute": {"mlir", "ptx", "sass"}, "cuda": {"ptx", "sass"},
          "tilelang": {"cuda", "ptx", "sass"}}
OTHER_EXAMPLES = sorted(p.name for p in EXAMPLES.iterdir()
                        if (p / "task.toml").exists() and p.name not in ("vector_add", "matmul"))


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def _version_dir(task: Path) -> Path:
    t = load_task(str(task))
    return t.version_dir(source_hash(t.kernel_source()))


def _dump_rung(task: Path, *extra: str) -> dict:
    proc = run_cli("check", str(task), "--rungs", "dump", "--json", "--no-history", *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    return next(r for r in report["rungs"] if r["name"] == "dump")


@pytest.fixture(scope="module")
def vector_task(tmp_path_factory):
    dest = tmp_path_factory.mktemp("dump") / "vector_add"
    copy_tree(EXAMPLES / "vector_add", dest)
    rung = _dump_rung(dest)
    return dest, rung


def test_vector_add_dump_has_128_bit_loads(vector_task):
    task, rung = vector_task
    assert rung["status"] == "ok", rung
    assert "LDG.E.128" in rung["summary"] and "regs" in rung["summary"] and "0 spills" in rung["summary"]
    m = rung["metrics"]
    assert m["global_load"] == "LDG.E.128" and m["global_load_bits"] == 128
    assert m["arch"] == "sm_90a" and m["on_gpu"] is False
    assert isinstance(m["registers"], int) and m["spill_store_bytes"] == 0
    assert undeclared("dump", m) == set()
    dump = Dump.load(_version_dir(task))
    primary = dump.variant("add_kernel")
    # The benchmark's n = 2^26 is divisible by 16: that specialisation vectorises.
    assert "n%16" in primary.label and any(c.startswith("benchmark") for c in primary.metadata["cases"])
    assert "ld.global.v4.b32" in dump.stage_text(primary, "ptx")
    # The awkward test sizes are specialised differently and load 32 bits at a time.
    labels = {v.label for v in dump.variants("add_kernel")}
    assert any(label.startswith("n=1 ") for label in labels)
    narrow = next(v for v in dump.variants("add_kernel") if "n%16" not in v.label and not v.label.startswith("n=1 "))
    assert narrow.mix.widest_global_load() == "LDG.E"
    assert primary.resources.spills_source.endswith("same cubin as the build")


def _assert_complete(task: Path, dump: Dump) -> None:
    """Every stage of the backend, a resource report, and SASS lines mapped to the kernel's source."""
    t = load_task(str(task))
    for v in dump.variants():
        assert STAGES[t.backend] <= set(v.stages), (v.kernel, v.label, v.stage_names)
        assert v.resources is not None and v.resources.registers, v.label
        assert v.resources.spill_store_bytes is not None and v.resources.occupancy, v.label
        assert v.mix is not None and v.mix.source == "sass" and v.mix.total > 0
        source = v.source_file or t.kernel_file
        assert dump.line_map(v, "sass").source_lines(source), f"no SASS line maps to {source}"
        assert dump.line_map(v, "ptx").source_lines(source), f"no PTX line maps to {source}"


@pytest.mark.slow  # a sweep over the examples; the vector add's dump tests cover the machinery
@pytest.mark.parametrize("name", OTHER_EXAMPLES)
def test_every_example_dumps_every_stage(example_task, name):
    if load_task(str(EXAMPLES / name)).backend == "tilelang" and importlib.util.find_spec("tilelang") is None:
        pytest.skip("tilelang is not installed here: ./dev setup installs it (pip install 'kerneltui[tilelang]')")
    task = example_task(name)
    rung = _dump_rung(task)
    assert rung["status"] == "ok", rung
    assert "regs" in rung["summary"] and "spills" in rung["summary"]
    _assert_complete(task, Dump.load(_version_dir(task)))


def test_vector_add_source_maps(vector_task):
    task, _ = vector_task
    dump = Dump.load(_version_dir(task))
    _assert_complete(task, dump)
    v = dump.variant("add_kernel")
    load_x = _line_of(task / "kernel.py", "x = tl.load(")
    sass = dump.stage_text(v, "sass").splitlines()
    hits = dump.asm_lines_for(v, "sass", "kernel.py", load_x)
    ldg = [n for n in hits if "LDG.E.128" in sass[n - 1]]
    assert ldg, "kernel.py's load line maps to its 128-bit loads"
    assert dump.source_for(v, "sass", ldg[0]).line == load_x
    ptx = dump.stage_text(v, "ptx").splitlines()
    assert any("ld.global.v4.b32" in ptx[n - 1] for n in dump.asm_lines_for(v, "ptx", "kernel.py", load_x))
    for stage in ("ttir", "ttgir", "llir"):
        assert dump.asm_lines_for(v, stage, "kernel.py", load_x), stage
    assert "/kerneltui-worker-" not in dump.stage_text(v, "ptx")


def test_asm_command_prints_stage_lines_and_lists(vector_task):
    task, _ = vector_task
    load_x = _line_of(task / "kernel.py", "x = tl.load(")
    proc = run_cli("asm", str(task), "--source-line", str(load_x))
    assert proc.returncode == 0, proc.stderr
    assert "LDG.E.128" in proc.stdout
    assert "no dump of this version yet" not in proc.stderr  # the rung's dump was reused
    listing = run_cli("asm", str(task), "--list")
    assert listing.returncode == 0 and "* add_kernel [n%16" in listing.stdout and "cases: " in listing.stdout
    annotated = run_cli("asm", str(task), "--stage", "ttgir", "--annotate")
    assert f"kernel.py:{load_x} " in annotated.stdout and "tt.load" in annotated.stdout
    data = json.loads(run_cli("asm", str(task), "--stage", "ptx", "--json").stdout)
    assert data["stage"] == "ptx" and "ld.global.v4.b32" in data["text"] and data["resources"]["registers"]
    missing = run_cli("asm", str(task), "--stage", "mlir")
    assert missing.returncode == 2 and "has no mlir stage" in missing.stderr
    unknown = run_cli("asm", str(task), "--name", "nope")
    assert unknown.returncode == 2 and "add_kernel" in unknown.stderr


def test_asm_diff_between_versions(vector_task, tmp_path):
    import shutil

    task = tmp_path / "va"
    shutil.copytree(vector_task[0], task)
    kernel = task / "kernel.py"
    # A change that must show in the compiled code: another block size.
    text = kernel.read_text()
    changed = text.replace("BLOCK = 1024", "BLOCK = 512")
    assert changed != text
    kernel.write_text(changed)
    proc = run_cli("asm", str(task), "--diff", "prev", "--stage", "ptx")
    assert proc.returncode == 0, proc.stderr
    assert "no dump of this version yet" in proc.stderr  # the new version was dumped first
    assert "add_kernel" in proc.stdout and "+" in proc.stdout and "−" in proc.stdout
    assert any(line.startswith("-") and "1024" in line for line in proc.stdout.splitlines())


def test_matmul_example_uses_wgmma_for_sm90a(example_task):
    task = example_task("matmul")
    rung = _dump_rung(task)
    assert rung["status"] == "ok", rung
    assert "HGMMA" in rung["summary"]
    assert rung["metrics"]["tensor_op"] == "HGMMA" and rung["metrics"]["tensor_ops"] > 0
    dump = Dump.load(_version_dir(task))
    _assert_complete(task, dump)
    v = dump.variant()
    assert "wgmma.mma_async" in dump.stage_text(v, "ptx")
    dot = _line_of(task / "kernel.py", "tl.dot(")
    sass = dump.stage_text(v, "sass").splitlines()
    assert any("HGMMA" in sass[n - 1] for n in dump.asm_lines_for(v, "sass", "kernel.py", dot))


def test_asm_command_dumps_for_another_arch(example_task):
    task = example_task("matmul")
    proc = run_cli("asm", str(task), "--arch", "sm_80", "--list")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("arch sm_80")
    assert " HMMA" in proc.stdout and "HGMMA" not in proc.stdout


AUTOTUNED = '''import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 512}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=8)],
                 key=["n"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    return out
'''


def test_autotuned_kernel_dumps_every_config(example_task):
    # Nothing is timed without a GPU, so every config is dumped and none is called the best.
    task = example_task("vector_add", kernel_text=AUTOTUNED)
    rung = _dump_rung(task)
    assert rung["status"] == "ok", rung
    dump = Dump.load(_version_dir(task))
    bench = [v for v in dump.variants("add_kernel") if any(c.startswith("benchmark") for c in v.metadata["cases"])]
    assert sorted(v.label for v in bench) == ["n%16 BLOCK=1024 w8 s3", "n%16 BLOCK=512 w4 s3"]
    assert all("not tuned here" in v.metadata["autotune"] for v in bench)
    assert dump.primary().label == "n%16 BLOCK=512 w4 s3"  # the first config stands in for the benchmark's
    assert {v.resources.threads_per_block for v in bench} == {128, 256}


def test_interpreter_still_works_after_an_ahead_of_time_compile(example_task):
    """The dump compiles with the interpreter's patches of triton.language undone; they must come
    back, or the next interpreted run in the same worker breaks."""
    import asyncio

    from kerneltui.core.rungs import correctness
    from kerneltui.core.rungs.context import RunContext, RunOptions
    from kerneltui.core.rungs.dump import case_inputs
    from kerneltui.core.worker.parent.pool import WorkerPool

    task = load_task(str(example_task("softmax")))  # tl.max / tl.sum: Triton's own @jit helpers

    async def go() -> tuple[dict, dict, dict]:
        pool = WorkerPool(task.backend, replenish=False)
        ctx = RunContext(task=task, source=task.kernel_source(), files=task.read_sources(), options=RunOptions(seeds=1),
                         pool=pool, run_id="aot", emit=lambda e: None, source_hash="x",
                         version_dir=task.version_dir("x"))
        try:
            worker = await ctx.check_worker()
            judging = await ctx.judging()
            load = await worker.request("load", await ctx.load_args(judging), timeout=300)
            ctx.data.load = load
            _, cases = await case_inputs(ctx, judging)
            dump = await worker.request("dump", {"arch": "sm_90a", "cases": cases}, timeout=300)
            result = await correctness.run(ctx)  # the same worker, interpreted again after the compile
            return load, dump, {"status": result.status, "error": result.error}
        finally:
            await ctx.release_workers()
            await pool.close()

    load, dump, checks = asyncio.run(go())
    assert load["kernels"] == ["softmax_kernel"]
    assert dump["artifacts"] and not [n for n in dump["notes"] if "could not compile" in n]
    assert checks["status"] == "ok", checks["error"]
