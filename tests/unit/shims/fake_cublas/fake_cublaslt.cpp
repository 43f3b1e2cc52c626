// Stand-in for libcublasLt.so.13 (same SONAME and version node): descriptors that store attributes
// with the real library's widths and defaults (checked against the real cuBLASLt 13), and a
// cublasLtMatmul that only logs its arguments. No GPU, no real arithmetic.
#include <cublasLt.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fake_log.hpp"

namespace {

std::mutex g_log_mutex;
std::string g_log;

struct AttrSpec {
  int attr;
  std::size_t bytes;
  std::int64_t default_value;
};

// Widths and defaults as cublasLt.h documents them.
const std::vector<AttrSpec> kDescAttrs = {
    {CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 4, 0}, {CUBLASLT_MATMUL_DESC_SCALE_TYPE, 4, 0},
    {CUBLASLT_MATMUL_DESC_POINTER_MODE, 4, 0}, {CUBLASLT_MATMUL_DESC_TRANSA, 4, 0},
    {CUBLASLT_MATMUL_DESC_TRANSB, 4, 0},       {CUBLASLT_MATMUL_DESC_TRANSC, 4, 0},
    {CUBLASLT_MATMUL_DESC_FILL_MODE, 4, 2},    {CUBLASLT_MATMUL_DESC_EPILOGUE, 4, 1},
    {CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8, 0}, {CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8, 0},
    {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 8, 0}, {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, 8, 0}, {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, 8, 0}, {CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1, 0},
    {CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 4, -1}, {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_B_SCALE_MODE, 4, 0},  {CUBLASLT_MATMUL_DESC_C_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_D_SCALE_MODE, 4, 0},  {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, 8, 0},
};
const std::vector<AttrSpec> kLayoutAttrs = {
    {CUBLASLT_MATRIX_LAYOUT_TYPE, 4, 0},   {CUBLASLT_MATRIX_LAYOUT_ORDER, 4, 0},
    {CUBLASLT_MATRIX_LAYOUT_ROWS, 8, 0},   {CUBLASLT_MATRIX_LAYOUT_COLS, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_LD, 8, 0},     {CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4, 1},
    {CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, 8, 0}, {CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, 4, 0},
};

const AttrSpec* spec_of(const std::vector<AttrSpec>& table, int attr) {
  for (const AttrSpec& s : table) {
    if (s.attr == attr) return &s;
  }
  return nullptr;
}

// Attribute storage: little-endian integers of the spec's width.
struct AttrStore {
  const std::vector<AttrSpec>* table;
  std::map<int, std::int64_t> values;

  cublasStatus_t set(int attr, const void* buf, std::size_t bytes) {
    const AttrSpec* s = spec_of(*table, attr);
    if (s == nullptr || bytes != s->bytes || buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    std::int64_t v = 0;
    std::memcpy(&v, buf, bytes);
    if (bytes == 4) v = static_cast<std::int32_t>(v);  // sign-extend int32 values (-1)
    if (bytes == 1) v = static_cast<std::int8_t>(v);
    values[attr] = v;
    return CUBLAS_STATUS_SUCCESS;
  }
  cublasStatus_t get(int attr, void* buf, std::size_t bytes, std::size_t* written) const {
    const AttrSpec* s = spec_of(*table, attr);
    if (s == nullptr || bytes != s->bytes || buf == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    const std::int64_t v = value(attr);
    std::memcpy(buf, &v, bytes);
    if (written != nullptr) *written = bytes;
    return CUBLAS_STATUS_SUCCESS;
  }
  std::int64_t value(int attr) const {
    const auto it = values.find(attr);
    return it != values.end() ? it->second : spec_of(*table, attr)->default_value;
  }
};

struct FakeLtHandle {
  int id;
};

int g_next_lt_handle = 1;

std::string describe_desc(const AttrStore* d) {
  return fake_cublas::format(
      "[compute=%lld scale=%lld pm=%lld ta=%lld tb=%lld epilogue=%lld bias=%p biastype=%lld "
      "ascale=%p]",
      (long long)d->value(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
      (long long)d->value(CUBLASLT_MATMUL_DESC_SCALE_TYPE),
      (long long)d->value(CUBLASLT_MATMUL_DESC_POINTER_MODE),
      (long long)d->value(CUBLASLT_MATMUL_DESC_TRANSA),
      (long long)d->value(CUBLASLT_MATMUL_DESC_TRANSB),
      (long long)d->value(CUBLASLT_MATMUL_DESC_EPILOGUE),
      reinterpret_cast<void*>(d->value(CUBLASLT_MATMUL_DESC_BIAS_POINTER)),
      (long long)d->value(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE),
      reinterpret_cast<void*>(d->value(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER)));
}

std::string describe_layout(const AttrStore* l) {
  return fake_cublas::format(
      "[type=%lld order=%lld rows=%lld cols=%lld ld=%lld batch=%lld stride=%lld]",
      (long long)l->value(CUBLASLT_MATRIX_LAYOUT_TYPE), (long long)l->value(CUBLASLT_MATRIX_LAYOUT_ORDER),
      (long long)l->value(CUBLASLT_MATRIX_LAYOUT_ROWS), (long long)l->value(CUBLASLT_MATRIX_LAYOUT_COLS),
      (long long)l->value(CUBLASLT_MATRIX_LAYOUT_LD),
      (long long)l->value(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT),
      (long long)l->value(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET));
}

// The scale type decides how alpha/beta are read (float for R_32F, half bits for R_16F).
std::string describe_scalar(const AttrStore* d, const void* p) {
  if (p == nullptr) return "null";
  if (d->value(CUBLASLT_MATMUL_DESC_POINTER_MODE) != CUBLASLT_POINTER_MODE_HOST) {
    return fake_cublas::format("dev:%p", p);  // device scalars: logged, never read
  }
  return fake_cublas::host_scalar(p, d->value(CUBLASLT_MATMUL_DESC_SCALE_TYPE) == CUDA_R_16F);
}

}  // namespace


extern "C" {

void fake_cublas_log_append(const char* line) {
  const std::lock_guard lock(g_log_mutex);
  g_log += line;
  g_log += '\n';
}
const char* fake_cublas_log_text() { return g_log.c_str(); }
void fake_cublas_log_clear() {
  const std::lock_guard lock(g_log_mutex);
  g_log.clear();
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  *handle = reinterpret_cast<cublasLtHandle_t>(new FakeLtHandle{g_next_lt_handle++});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete reinterpret_cast<FakeLtHandle*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  auto* d = new AttrStore{&kDescAttrs, {}};
  d->values[CUBLASLT_MATMUL_DESC_COMPUTE_TYPE] = compute;
  d->values[CUBLASLT_MATMUL_DESC_SCALE_TYPE] = scale;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete reinterpret_cast<AttrStore*>(desc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t bytes) {
  return reinterpret_cast<AttrStore*>(desc)->set(attr, buf, bytes);
}
cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, void* buf,
                                              size_t bytes, size_t* written) {
  return reinterpret_cast<const AttrStore*>(desc)->get(attr, buf, bytes, written);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  auto* l = new AttrStore{&kLayoutAttrs, {}};
  l->values[CUBLASLT_MATRIX_LAYOUT_TYPE] = type;
  l->values[CUBLASLT_MATRIX_LAYOUT_ROWS] = static_cast<std::int64_t>(rows);
  l->values[CUBLASLT_MATRIX_LAYOUT_COLS] = static_cast<std::int64_t>(cols);
  l->values[CUBLASLT_MATRIX_LAYOUT_LD] = ld;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete reinterpret_cast<AttrStore*>(layout);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t bytes) {
  return reinterpret_cast<AttrStore*>(layout)->set(attr, buf, bytes);
}
cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                size_t bytes, size_t* written) {
  return reinterpret_cast<const AttrStore*>(layout)->get(attr, buf, bytes, written);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace, size_t ws_bytes,
                              cudaStream_t stream) {
  const auto* d = reinterpret_cast<const AttrStore*>(desc);
  const std::string line = fake_cublas::format(
      "cublasLtMatmul lt#%d desc=%s alpha=%s A=%p Adesc=%s B=%p Bdesc=%s beta=%s C=%p Cdesc=%s "
      "D=%p Ddesc=%s algo=%p ws=%p wsbytes=%zu stream=%p",
      reinterpret_cast<FakeLtHandle*>(handle)->id, describe_desc(d).c_str(),
      describe_scalar(d, alpha).c_str(), A,
      describe_layout(reinterpret_cast<const AttrStore*>(Adesc)).c_str(), B,
      describe_layout(reinterpret_cast<const AttrStore*>(Bdesc)).c_str(),
      describe_scalar(d, beta).c_str(), C,
      describe_layout(reinterpret_cast<const AttrStore*>(Cdesc)).c_str(), D,
      describe_layout(reinterpret_cast<const AttrStore*>(Ddesc)).c_str(),
      static_cast<const void*>(algo), workspace, ws_bytes, static_cast<void*>(stream));
  fake_cublas_log_append(line.c_str());
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
