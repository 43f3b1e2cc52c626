// Defaults of the named parameters that the warpgroup families wg_tiled and wg_tma share (and,
// through mma_defaults.cuh, the tensor-core ones), for a compile that sets none of them (nvcc on the
// bare file); a rendered source defines every parameter before the kernel text.
//
// Not a header a candidate may include: the embedded-source helper (embedded_kernels.cpp) replaces
// each `#include "wg_defaults.cuh"` line with this text, so a rendered (and stored) source stays one
// self-contained translation unit; nvcc (the kernel lab) reads it from beside the family's file.
#include "mma_defaults.cuh"
#ifndef KD_WG
#define KD_WG 2
#endif
#ifndef KD_MW
#define KD_MW 1
#endif
#ifndef KD_BN
#define KD_BN 128
#endif
#ifndef KD_STAGES
#define KD_STAGES 4
#endif
#ifndef KD_CLUSTER
#define KD_CLUSTER 0
#endif
