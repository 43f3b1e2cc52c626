#include "eval/cublaslt_candidate.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kd::eval {

CublasLtCandidate::CublasLtCandidate(const CublasLtLibrary& lt, const GemmKey& key, const CublasLtAlgo& algo)
    : lt_(&lt), key_(key), spec_(algo), handle_(lt), matmul_(std::make_unique<LtMatmul>(lt, key)),
      algo_(to_matmul_algo(algo.bytes)) {}

std::variant<std::unique_ptr<CublasLtCandidate>, CandidateError> CublasLtCandidate::make(
    const GemmKey& key, const CublasLtAlgo& algo) {
  using Kind = CandidateError::Kind;
  const CublasLtLibrary* lt = cublaslt_library();
  if (lt == nullptr) return CandidateError{Kind::load_failed, cublaslt_unavailable_reason()};
  if (algo.version <= 0 || static_cast<std::size_t>(algo.version) != lt->version) {
    return CandidateError{Kind::load_failed,
                          fmt::format("the algorithm comes from cuBLASLt {}; this worker has cuBLASLt {}",
                                      algo.version, lt->version)};
  }
  if (algo.bytes.size() != kCublasLtAlgoBytes) {
    return CandidateError{Kind::load_failed, fmt::format("a cuBLASLt algorithm is {} bytes, got {}",
                                                         kCublasLtAlgoBytes, algo.bytes.size())};
  }
  std::unique_ptr<CublasLtCandidate> c;
  try {
    c.reset(new CublasLtCandidate(*lt, key, algo));
  } catch (const Error& e) {
    return CandidateError{Kind::load_failed, e.what()};
  }
  cublasLtMatmulHeuristicResult_t check{};
  const cublasStatus_t st = lt->cublasLtMatmulAlgoCheck(c->handle_.get(), c->matmul_->desc(), c->matmul_->a(),
                                                        c->matmul_->b(), c->matmul_->c(), c->matmul_->c(),
                                                        &c->algo_, &check);
  if (st != CUBLAS_STATUS_SUCCESS)
    return CandidateError{Kind::load_failed, "cublasLtMatmulAlgoCheck: " + cublaslt_status_text(st)};
  c->workspace_bytes_ = std::max<std::uint64_t>(algo.workspace_bytes, check.workspaceSize);
  return c;
}

std::optional<std::string> CublasLtCandidate::launch(const KernelArgs& call, CUstream stream) const {
  if (!call.holds<kd_gemm_args>()) return std::string("a cuBLASLt algorithm computes GEMMs only");
  const kd_gemm_args args = call.as<kd_gemm_args>();
  try {
    if (key_.epilogue == Epilogue::bias) matmul_->set_bias(args.bias);
  } catch (const Error& e) {
    return std::string(e.what());
  }
  const float alpha_f = args.alpha, beta_f = args.beta;
  const std::uint16_t alpha_h = to_half_bits(args.alpha), beta_h = to_half_bits(args.beta);
  const bool half = matmul_->half_scale();
  const void* alpha = half ? static_cast<const void*>(&alpha_h) : &alpha_f;
  const void* beta = half ? static_cast<const void*>(&beta_h) : &beta_f;
  const cublasStatus_t st = lt_->cublasLtMatmul(handle_.get(), matmul_->desc(), alpha, args.a, matmul_->a(), args.b,
                                                matmul_->b(), beta, args.c, matmul_->c(), args.c, matmul_->c(),
                                                &algo_, args.workspace, workspace_bytes_, stream);
  if (st != CUBLAS_STATUS_SUCCESS) return "cublasLtMatmul: " + cublaslt_status_text(st);
  return std::nullopt;
}

std::unique_ptr<GateCandidate> CublasLtCandidate::fresh() const {
  auto again = make(key_, spec_);
  if (auto* c = std::get_if<std::unique_ptr<CublasLtCandidate>>(&again)) return std::move(*c);
  return nullptr;
}

}  // namespace kd::eval
