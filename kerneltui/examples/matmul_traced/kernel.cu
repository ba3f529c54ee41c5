// C = A @ B in float32, pipelined: while one K-tile is multiplied out of shared memory, the next
// is already on its way (cp.async, two stages). Named regions for kerneltui's trace rung:
//   load    issue the next tile's copies and wait until the current tile has landed
//   compute the FMAs on the current tile
//   store   write the 64x64 block of C
// Built without -DKTRACE (the real kernel) the KTRACE_* markers compile to nothing.
#include "kerneltui_trace.cuh"

constexpr int BM = 64, BN = 64, BK = 16;
constexpr int THREADS = 256;  // 16 x 16 threads, each computing a 4 x 4 block of C

enum Region { LOAD, COMPUTE, STORE, NUM_REGIONS };

__device__ __forceinline__ void cp_async4(float* smem, const float* gmem, bool valid) {
    unsigned int dst = static_cast<unsigned int>(__cvta_generic_to_shared(smem));
    // src-size 0 zero-fills the word: tiles past the matrix edge read as zeros.
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

__global__ void __launch_bounds__(THREADS)
matmul_pipelined(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K,
       long long* trace) {
    __shared__ float As[2][BK][BM];  // A tile stored k-major so a thread's 4 rows are contiguous
    __shared__ float Bs[2][BK][BN];
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tr = tid / 16, tc = tid % 16;
    const int tiles = (K + BK - 1) / BK;
    float acc[4][4] = {};

    auto issue = [&](int stage, int kt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // A: BM x BK = 1024 words, 4 per thread
            const int idx = tid + i * THREADS, m = idx / BK, k = idx % BK;
            const int gm = row0 + m, gk = kt * BK + k;
            const bool ok = gm < M && gk < K;
            cp_async4(&As[stage][k][m], ok ? A + (long long)gm * K + gk : A, ok);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // B: BK x BN = 1024 words
            const int idx = tid + i * THREADS, k = idx / BN, n = idx % BN;
            const int gk = kt * BK + k, gn = col0 + n;
            const bool ok = gk < K && gn < N;
            cp_async4(&Bs[stage][k][n], ok ? B + (long long)gk * N + gn : B, ok);
        }
    };

    issue(0, 0);
    cp_async_commit();
    for (int kt = 0; kt < tiles; ++kt) {
        const int stage = kt & 1;
        KTRACE_BEGIN(t_load);
        if (kt + 1 < tiles) issue(stage ^ 1, kt + 1);
        cp_async_commit();  // an empty group on the last step keeps wait_group 1 meaning "tile kt is in"
        cp_async_wait_one();
        __syncthreads();
        KTRACE_END(trace, NUM_REGIONS, LOAD, t_load);

        KTRACE_BEGIN(t_compute);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = As[stage][k][tr * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = Bs[stage][k][tc * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();  // every thread is done with this stage before the next step refills it
        KTRACE_END(trace, NUM_REGIONS, COMPUTE, t_compute);
    }

    KTRACE_BEGIN(t_store);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int gm = row0 + tr * 4 + i;
        if (gm >= M) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int gn = col0 + tc * 4 + j;
            if (gn < N) C[(long long)gm * N + gn] = acc[i][j];
        }
    }
    __syncthreads();
    KTRACE_END(trace, NUM_REGIONS, STORE, t_store);
}
