"""y = a * x + b in the CuTe DSL, every block full (n a multiple of a block's 4096 elements), with
its regions marked for IKET: each thread loads its 128-bit vectors, computes, stores."""

import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.experimental import iket
from cutlass.cute.runtime import from_dlpack

THREADS = 256
VEC = 4
STEPS = 4
TILE = THREADS * VEC


@cute.kernel
def axpb_kernel(gX: cute.Tensor, gY: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32,
                thr_layout: cute.Layout, val_layout: cute.Layout):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gX.element_type, num_bits_per_copy=128)
    thr_copy = cute.make_tiled_copy_tv(atom, thr_layout, val_layout).get_slice(tidx)
    token = iket.range_start("load")
    xs = []
    for step in cutlass.range_constexpr(STEPS):
        tX = thr_copy.partition_S(gX[(None, bidx * STEPS + step)])
        rX = cute.make_fragment_like(tX)
        cute.copy(atom, tX, rX)
        xs.append(rX)
    iket.range_end(token)
    token = iket.range_start("compute")
    ys = []
    for step in cutlass.range_constexpr(STEPS):
        rY = cute.make_fragment_like(xs[step])
        rY.store(xs[step].load() * a + b)
        ys.append(rY)
    iket.range_end(token)
    token = iket.range_start("store")
    for step in cutlass.range_constexpr(STEPS):
        tY = thr_copy.partition_D(gY[(None, bidx * STEPS + step)])
        cute.copy(atom, ys[step], tY)
    iket.range_end(token)


@cute.jit
def axpb(mX: cute.Tensor, mY: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32):
    thr_layout = cute.make_layout(THREADS)
    val_layout = cute.make_layout(VEC)
    tiler, _ = cute.make_layout_tv(thr_layout, val_layout)
    gX = cute.zipped_divide(mX, tiler)
    gY = cute.zipped_divide(mY, tiler)
    blocks = cute.size(gY, mode=[1]) // STEPS
    axpb_kernel(gX, gY, a, b, thr_layout, val_layout).launch(grid=[blocks, 1, 1], block=[THREADS, 1, 1])


_compiled = {}


def custom_kernel(x: torch.Tensor, a: float, b: float) -> torch.Tensor:
    assert x.numel() % (STEPS * TILE) == 0, "this kernel handles whole blocks only"
    y = torch.empty_like(x)
    mX = from_dlpack(x, assumed_align=16).mark_layout_dynamic()
    mY = from_dlpack(y, assumed_align=16).mark_layout_dynamic()
    fn = _compiled.get(x.dtype)
    if fn is None:
        fn = _compiled[x.dtype] = cute.compile(axpb, mX, mY, a, b)
    fn(mX, mY, a, b)
    return y
