// KD_HD: what marks the functions that both the host rules and the kernels compile (the layout
// headers wg_tiled_layout.cuh and wg_tma_layout.cuh): __host__ __device__ under NVRTC and nvcc,
// nothing under the host compiler. Plain C++17, like the headers that include it.
#ifndef KD_HD
#if defined(__CUDACC__)
#define KD_HD __host__ __device__
#else
#define KD_HD
#endif
#endif
