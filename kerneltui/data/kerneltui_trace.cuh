// kerneltui's intra-kernel tracer for CUDA C++: time named regions inside a kernel, per CTA.
//
//   #include "kerneltui_trace.cuh"        // launch.py: kerneltui.cuda.load(..., include_dirs=[ktrace.include_dir()])
//   enum Region { LOAD, COMPUTE, STORE, NUM_REGIONS };
//   __global__ void k(..., long long* trace) {
//       KTRACE_BEGIN(t);  ...loads...  KTRACE_END(trace, NUM_REGIONS, LOAD, t);
//   }
//
// Built with -DKTRACE (kerneltui.ktrace.defines() when the harness traces) the macros record;
// without it they compile to nothing, so the untraced build is the real kernel. The buffer is
// allocated and zero-filled by the harness: ctas x regions x KTRACE_WORDS 64-bit words, one
// record per (CTA, region) written only by the CTA's thread 0 (no atomics), accumulating over a
// region's occurrences (a loop body). Layout, which kerneltui/core/trace/buffer.py reads:
//   0 first begin %globaltimer (ns)   1 last end %globaltimer   2 busy ns (sum of end - begin)
//   3 count                           4 %smid                   5 first begin clock64
//   6 last end clock64                7 busy cycles (sum of clock64 deltas)
// Times are what thread 0 sees: put a region's end after the __syncthreads() that finishes it
// when the whole CTA's work is meant.
#pragma once
#include <cstdint>

#define KTRACE_WORDS 8

namespace ktrace {

struct Mark {
    unsigned long long ns;
    long long clk;
};

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
    return t;
}

__device__ __forceinline__ unsigned int smid() {
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

__device__ __forceinline__ bool leader() {
    return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
}

__device__ __forceinline__ Mark begin() {
    Mark m;
    m.clk = clock64();
    m.ns = globaltimer();
    return m;
}

__device__ __forceinline__ void end(long long* buf, int num_regions, int region, Mark m) {
    unsigned long long ns = globaltimer();
    long long clk = clock64();
    if (!leader()) return;
    unsigned long long cta = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    volatile long long* s = buf + (cta * num_regions + region) * KTRACE_WORDS;
    if (s[3] == 0) {
        s[0] = (long long)m.ns;
        s[4] = (long long)smid();
        s[5] = m.clk;
    }
    s[1] = (long long)ns;
    s[2] = s[2] + (long long)(ns - m.ns);
    s[3] = s[3] + 1;
    s[6] = clk;
    s[7] = s[7] + (clk - m.clk);
}

}  // namespace ktrace

#ifdef KTRACE
#define KTRACE_BEGIN(mark) ::ktrace::Mark mark = ::ktrace::begin()
#define KTRACE_END(buf, num_regions, region, mark) ::ktrace::end((buf), (num_regions), (region), mark)
#else
#define KTRACE_BEGIN(mark) do { } while (0)
#define KTRACE_END(buf, num_regions, region, mark) do { (void)(buf); } while (0)
#endif
