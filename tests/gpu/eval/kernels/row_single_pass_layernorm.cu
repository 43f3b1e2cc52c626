// Layernorm with the variance as E[x^2] - E[x]^2 (the published single-pass kernel's flaw): fails on rows of mean 1000 and std 0.1.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[264,1,1],"block":[256,1,1],"smem":0}],"workspace":0}
#define ROW_OP 1
#define ROW_SINGLE_PASS 1
#include "row_simple.cuh"
