"""The dump on a real GPU: kernels come from the JIT's own cache, and the ahead-of-time build used
without a GPU reproduces exactly what the GPU's JIT built (same specialisation, same PTX)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from kerneltui.core.asm.store import Dump
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import EXAMPLES, ROOT, run_cli
from tests.gpu.examples import example_params

pytestmark = pytest.mark.gpu

STAGES = {"triton": {"ttir", "ttgir", "llir", "ptx", "sass"}, "cute": {"mlir", "ptx", "sass"}, "cuda": {"ptx", "sass"},
          "tilelang": {"cuda", "ptx", "sass"}}


def _dump(task) -> tuple[dict, Dump]:
    proc = run_cli("check", str(task), "--rungs", "correctness,dump", "--json", "--no-history")
    report = json.loads(proc.stdout)
    rung = next(r for r in report["rungs"] if r["name"] == "dump")
    t = load_task(str(task))
    return rung, Dump.load(t.version_dir(source_hash(t.kernel_source())))


@pytest.mark.parametrize("name", example_params())
def test_every_example_dumps_on_the_gpu(example_task, name):
    task = example_task(name)
    backend = load_task(str(task)).backend
    rung, dump = _dump(task)
    assert rung["status"] == "ok", rung
    assert rung["metrics"]["on_gpu"] is True
    assert dump.arch.startswith("sm_")
    for v in dump.variants():
        assert STAGES[backend] <= set(v.stages), v.label
        assert v.resources is not None and v.resources.registers
        assert v.resources.spill_store_bytes is not None and v.resources.occupancy
        # What the driver reported when it loaded the kernel agrees with the cubin.
        if "driver_registers" in v.metadata:
            assert v.metadata["driver_registers"] == v.resources.registers
    if backend == "triton":
        # Test cases ran in this worker before the dump: their kernels come from the JIT's cache.
        assert any(v.metadata.get("compiled") == "JIT device cache" for v in dump.variants())


def test_vector_add_on_the_gpu_has_128_bit_loads(example_task):
    rung, dump = _dump(example_task("vector_add"))
    assert rung["metrics"]["global_load"] == "LDG.E.128"
    v = dump.variant("add_kernel")
    assert "ld.global.v4.b32" in dump.stage_text(v, "ptx")


def test_matmul_on_hopper_has_hgmma(example_task):
    rung, dump = _dump(example_task("matmul"))
    if not dump.arch.startswith("sm_90"):
        pytest.skip(f"wgmma is Hopper's; this GPU is {dump.arch}")
    assert rung["metrics"]["tensor_op"] == "HGMMA"
    assert "wgmma.mma_async" in dump.stage_text(dump.variant(), "ptx")


AOT_VS_JIT = textwrap.dedent(
    """
    import json, sys, torch, triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend
    from triton.runtime import driver
    sys.path.insert(0, sys.argv[1])
    from kerneltui.core.backends.triton_dump import Twins, specialise
    sys.path.insert(0, sys.argv[2] + "/vector_add")
    import kernel as va
    sys.path.insert(0, sys.argv[2] + "/matmul")
    import importlib.util
    spec = importlib.util.spec_from_file_location("mm", sys.argv[2] + "/matmul/kernel.py")
    mm = importlib.util.module_from_spec(spec); spec.loader.exec_module(mm)

    out = {}
    cases = {
        "vector_add_bench": (va, (torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")), va.add_kernel),
        "vector_add_odd": (va, (torch.randn(4097, device="cuda"), torch.randn(4097, device="cuda")), va.add_kernel),
        "matmul": (mm, (torch.randn(512, 512, device="cuda", dtype=torch.float16),
                        torch.randn(512, 512, device="cuda", dtype=torch.float16)), mm.matmul_kernel),
    }
    device = driver.active.get_current_device()
    target = driver.active.get_current_target()
    aot_target = GPUTarget("cuda", target.arch, 32)
    for name, (module, inputs, jit_fn) in cases.items():
        seen = []
        original = type(jit_fn).run
        def recording_run(self, *args, grid, warmup, **kwargs):
            seen.append((args, dict(kwargs)))
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        type(jit_fn).run = recording_run
        try:
            module.custom_kernel(*inputs)
            torch.cuda.synchronize()
        finally:
            type(jit_fn).run = original
        args, kwargs = seen[-1]
        launch = specialise(jit_fn, args, kwargs, make_backend(aot_target), Twins())
        cache = jit_fn.device_caches[device][0]
        jit_kernel = cache.get(launch.key)
        aot = triton.compile(ASTSource(launch.fn, launch.signature, launch.constexprs, launch.attrs),
                             target=aot_target, options=launch.options.__dict__)
        out[name] = {"key_found": jit_kernel is not None,
                     "same_ptx": jit_kernel is not None and jit_kernel.asm["ptx"] == aot.asm["ptx"],
                     "same_cubin": jit_kernel is not None and jit_kernel.asm["cubin"] == aot.asm["cubin"]}
    print(json.dumps(out))
    """
)


def test_ahead_of_time_build_matches_the_jit(tmp_path):
    script = tmp_path / "aot_vs_jit.py"
    script.write_text(AOT_VS_JIT)
    proc = subprocess.run([sys.executable, str(script), str(ROOT), str(EXAMPLES)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, r in result.items():
        assert r["key_found"], f"{name}: the dump's specialisation key is not the one the JIT cached"
        assert r["same_ptx"], f"{name}: the ahead-of-time PTX differs from the JIT's"
        assert r["same_cubin"], f"{name}: the ahead-of-time cubin differs from the JIT's"
