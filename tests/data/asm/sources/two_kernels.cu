__device__ __forceinline__ float sq(float x) { return x * x; }
__global__ void k1(const float* __restrict__ a, float* __restrict__ b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = sq(a[i]) + 1.0f;
}
__global__ void k2(float* b, int n) {
  __shared__ float s[256];
  int i = threadIdx.x;
  s[i] = b[i];
  __syncthreads();
  if (i < n) b[i] = s[255 - i];
}
