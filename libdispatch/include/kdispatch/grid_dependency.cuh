/* The wait a "pdl" launch owes the kernel before it on the stream, shared by every operator's kernel
 * contract (<kdispatch/gemm.cuh>, <kdispatch/rowop.cuh>, which describe when it is owed); a no-op
 * when the launch is not a programmatic dependent, and before sm_90. Handed to NVRTC with them. */
#ifndef KDISPATCH_GRID_DEPENDENCY_CUH
#define KDISPATCH_GRID_DEPENDENCY_CUH

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KD_GRID_DEPENDENCY_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define KD_GRID_DEPENDENCY_WAIT() \
  do {                            \
  } while (0)
#endif

#endif /* KDISPATCH_GRID_DEPENDENCY_CUH */
