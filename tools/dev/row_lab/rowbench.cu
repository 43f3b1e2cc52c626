// Standalone timing of one row_reduce variant (its KD_* macros given with -D) at shapes given as
// ROWS:COLS arguments: plain back-to-back launches over copies of x (about 200 MB), no graph, no PDL.
// Built and run by tools/dev/row_lab/row_lab.sh; a quick way to compare variants on a device before
// putting them through the gate (GpuEvalRowGate.RowReduceSeedsPassTheGate with KD_ROW_GATE_EXTRA).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "row_reduce.cu"  // search/src/builtin/kernels, on the include path
int main(int argc, char** argv) {
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int ai = 1; ai < argc; ++ai) {
    long long rows, cols; sscanf(argv[ai], "%lld:%lld", &rows, &cols);
    size_t n = rows * cols, eb = sizeof(kd_t);
    const long long nvec = cols / KD_VEC, rpb = KD_THREADS / KD_ROW_THREADS, chunk = (nvec + KD_CLUSTER - 1) / KD_CLUSTER;
    int smem = (int)(KD_STAGES * rpb * chunk * 16);
    if (smem > 48 * 1024) cudaFuncSetAttribute(kd_row_main, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    int occ = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kd_row_main, KD_THREADS, smem);
    long long waves = KD_STAGES > 0 ? 1 : (getenv("WAVES") ? atoll(getenv("WAVES")) : 4);
    long long grid = std::min((rows + rpb - 1) / rpb, std::max(1LL, waves * sms * occ / KD_CLUSTER)) * KD_CLUSTER;
    int copies = std::max<long long>(2, std::min<long long>(8, (200LL << 20) / (long long)(n * eb) + 1));
    std::vector<void*> xs(copies);
    for (auto& p : xs) { cudaMalloc(&p, n * eb); cudaMemset(p, 0x3c, n * eb); }
    void *w, *b, *y, *ws;
    cudaMalloc(&w, cols * eb); cudaMalloc(&b, cols * eb); cudaMalloc(&y, n * eb); cudaMalloc(&ws, 1 << 20);
    cudaMemset(w, 0x3c, cols * eb); cudaMemset(b, 0, cols * eb);
    kd_row_args a{xs[0], KD_HAS_W ? w : nullptr, KD_HAS_B ? b : nullptr, y, ws, rows, cols, 1e-5f, 0};
    cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, kd_row_main);
    for (int i = 0; i < 3; ++i) kd_row_main<<<grid, KD_THREADS, smem>>>(a);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("%-22s %6lld x %-6lld error %s\n", VARIANT, rows, cols, cudaGetErrorString(e)); return 1; }
    int iters = std::max<long long>(10, std::min<long long>(200, (2000LL << 20) / (long long)(n * eb)));
    cudaEvent_t s0, s1; cudaEventCreate(&s0); cudaEventCreate(&s1);
    cudaEventRecord(s0);
    for (int i = 0; i < iters; ++i) { a.x = xs[i % copies]; kd_row_main<<<grid, KD_THREADS, smem>>>(a); }
    cudaEventRecord(s1); cudaEventSynchronize(s1);
    float ms; cudaEventElapsedTime(&ms, s0, s1);
    double us = ms * 1000 / iters, bytes = 2.0 * n * eb;
    printf("%-22s w%lld %6lld x %-6lld grid %6lld smem %6d regs %3d occ %2d : %9.2f us %5.2f TB/s\n", VARIANT, waves, rows, cols, grid, smem, fa.numRegs, occ, us, bytes / us / 1e6);
    for (auto p : xs) cudaFree(p);
    cudaFree(w); cudaFree(b); cudaFree(y); cudaFree(ws);
  }
  return 0;
}
