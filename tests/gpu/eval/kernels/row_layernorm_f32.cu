// Correct f32 layernorm (weight and bias when given): must pass the gate.
// kdispatch:plan {"launches":[{"entry":"kd_main","grid":[264,1,1],"block":[256,1,1],"smem":0}],"workspace":0}
#define ROW_OP 1
#include "row_simple.cuh"
