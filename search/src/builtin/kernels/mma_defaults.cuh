// Defaults of the named parameters that the tensor-core families tc_tiled, wg_tiled and wg_tma
// share, for a compile that sets none of them (nvcc on the bare file); a rendered source defines
// every parameter before the kernel text, so none of these applies there. KD_3XTF32 and KD_PROMOTE
// steer the f32 paths of tc_tiled and wg_tiled; wg_tma (16-bit only) reads neither.
//
// Not a header a candidate may include: the embedded-source helper (embedded_kernels.cpp) replaces
// each `#include "mma_defaults.cuh"` line with this text, so a rendered (and stored) source stays one
// self-contained translation unit; nvcc (the kernel lab) reads it from beside the family's file.
#ifndef KD_A_T
#define KD_A_T __nv_bfloat16
#endif
#ifndef KD_B_T
#define KD_B_T KD_A_T
#endif
#ifndef KD_C_T
#define KD_C_T KD_A_T
#endif
#ifndef KD_TA
#define KD_TA 1
#endif
#ifndef KD_TB
#define KD_TB 0
#endif
#ifndef KD_SPLITK
#define KD_SPLITK 1
#endif
#ifndef KD_3XTF32
#define KD_3XTF32 1
#endif
#ifndef KD_PROMOTE
#define KD_PROMOTE 1
#endif
#ifndef KD_BETA_ZERO
#define KD_BETA_ZERO 1
#endif
#ifndef KD_BIAS
#define KD_BIAS 0
#endif
