// y = a * x + b over n floats.
//
// Each thread moves UNROLL float4 vectors (16-byte loads and stores), issuing all its loads
// before any store so that several requests are in flight per thread. The last n % 4 elements,
// which do not fill a vector, are done one by one by the first threads of block 0. If either
// pointer is not 16-byte aligned (a view into another tensor), the same elements are done with
// scalar accesses instead: slower, never wrong.
#include <cstdint>

constexpr int THREADS = 256;  // launch.py launches blocks of this size
constexpr int UNROLL = 4;     // float4 vectors per thread

__global__ void __launch_bounds__(THREADS)
axpb(const float* __restrict__ x, float* __restrict__ y, float a, float b, long long n) {
    const long long n4 = n / 4;  // whole vectors
    const long long first = static_cast<long long>(blockIdx.x) * THREADS * UNROLL + threadIdx.x;
    const bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;

    if (aligned) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = first + u * THREADS;
            if (i < n4) v[u] = x4[i];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = first + u * THREADS;
            if (i < n4) {
                y4[i] = make_float4(fmaf(a, v[u].x, b), fmaf(a, v[u].y, b), fmaf(a, v[u].z, b), fmaf(a, v[u].w, b));
            }
        }
    } else {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = first + u * THREADS;
            if (i < n4) {
#pragma unroll
                for (int k = 0; k < 4; ++k) y[4 * i + k] = fmaf(a, x[4 * i + k], b);
            }
        }
    }

    const long long tail = n - 4 * n4;  // 0 to 3 elements
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const long long i = 4 * n4 + threadIdx.x;
        y[i] = fmaf(a, x[i], b);
    }
}
