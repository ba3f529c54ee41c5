__device__ __forceinline__ float poly(float x) {
  float y = x * x;
  y = y * 0.5f + x;
  return y * y + 1.0f;
}

__global__ void scale_kernel(const float* __restrict__ a, float* __restrict__ b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = a[i];
    b[i] = poly(v);
  }
}
