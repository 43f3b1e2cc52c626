// Lab (issue 27, session 50): kernels that l2_prefetch_step.py and decode_ceiling.py launch on torch's
// stream through ctypes, built as a shared library (l2_prefetch_step.py gives the nvcc line): an L2
// prefetch of a later call's weight by a tiny kernel that exits at once, a spin, and the kernel lab's
// streaming read standing in for a GEMM. Measured: docs/kernel-notes.md, session 50.
#include <cuda_runtime.h>
#include <cstdint>

__global__ void kd_l2_prefetch(const char* p, unsigned long long bytes, unsigned chunk, int mode) {
  const unsigned long long i = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) * chunk;
  if (i >= bytes) return;
  unsigned sz = static_cast<unsigned>(bytes - i < chunk ? bytes - i : chunk) & ~15u;
  if (mode == 0) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + i), "r"(sz) : "memory");
  } else {
    for (unsigned o = 0; o < sz; o += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + i + o) : "memory");
  }
}

__global__ void kd_spin(long long ns) {
  long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}

extern "C" int kd_lab_prefetch(const void* p, unsigned long long bytes, unsigned chunk, int mode, void* stream) {
  if (bytes == 0) { kd_l2_prefetch<<<1, 32, 0, (cudaStream_t)stream>>>((const char*)p, 0, chunk, mode); return cudaGetLastError(); }
  const unsigned long long per_block = 32ull * chunk;
  const unsigned blocks = static_cast<unsigned>((bytes + per_block - 1) / per_block);
  kd_l2_prefetch<<<blocks, 32, 0, (cudaStream_t)stream>>>((const char*)p, bytes, chunk, mode);
  return cudaGetLastError();
}

extern "C" int kd_lab_spin(long long ns, void* stream) {
  kd_spin<<<1, 32, 0, (cudaStream_t)stream>>>(ns);
  return cudaGetLastError();
}

// The kernel lab's streaming read (kernel_lab.py's kd_stream_read): every byte of p once, 16-byte
// loads, four in flight per thread; with `wait`, griddepcontrol.wait first, launched as a programmatic
// dependent as kdispatch launches its first kernels. Stands in for a GEMM at the streaming rate.
template <bool kWait>
__global__ void kd_stream_read(const uint4* p, long long n16, unsigned* sink) {
  if (kWait) asm volatile("griddepcontrol.wait;" ::: "memory");
  unsigned acc = 0;
  const long long step = (long long)gridDim.x * blockDim.x;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (; i + 3 * step < n16; i += 4 * step) {
    uint4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w) : "l"(p + i + j * step));
#pragma unroll
    for (int j = 0; j < 4; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < n16; i += step) { uint4 v = p[i]; acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

extern "C" int kd_lab_stream(const void* p, unsigned long long bytes, unsigned* sink, int pdl, void* stream) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(sms * 4);
  cfg.blockDim = dim3(512);
  cfg.stream = (cudaStream_t)stream;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl ? 1 : 0;
  const long long n16 = (long long)(bytes / 16);
  cudaError_t e = pdl ? cudaLaunchKernelEx(&cfg, kd_stream_read<true>, (const uint4*)p, n16, sink)
                      : cudaLaunchKernelEx(&cfg, kd_stream_read<false>, (const uint4*)p, n16, sink);
  return e;
}
