"""C = A @ B in TileLang: the tiled GEMM with a software pipeline.

Each block computes one BLOCK_M x BLOCK_N tile of C. Along K it copies a tile of A and one of B
into shared memory and multiplies them into a float32 accumulator held in registers (a
"fragment"). T.Pipelined overlaps the copies of the next NUM_STAGES - 1 tiles with the current
multiply; on Hopper TileLang lowers the copies to TMA and the multiply to wgmma, with a producer
warp group feeding the consumers. T.use_swizzle reorders the blocks so that neighbours share
tiles of A and B in L2.

TileLang specialises a kernel per shape: matmul(M, N, K) compiles once per (M, N, K) and the
jit decorator keeps the compiled kernels.
"""

import torch

import tilelang
import tilelang.language as T

BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 64
NUM_STAGES = 3
THREADS = 128


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), T.ceildiv(M, BLOCK_M), threads=THREADS) as (bx, by):
            A_shared = T.alloc_shared((BLOCK_M, BLOCK_K), dtype)
            B_shared = T.alloc_shared((BLOCK_K, BLOCK_N), dtype)
            C_local = T.alloc_fragment((BLOCK_M, BLOCK_N), accum_dtype)
            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=NUM_STAGES):
                T.copy(A[by * BLOCK_M, ko * BLOCK_K], A_shared)
                T.copy(B[ko * BLOCK_K, bx * BLOCK_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * BLOCK_M, bx * BLOCK_N])

    return gemm


def custom_kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    return matmul(M, N, K)(a, b)
