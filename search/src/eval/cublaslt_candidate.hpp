// A cuBLASLt algorithm as a gate candidate (design.md: "A cuBLASLt candidate is not a kernel"):
// one cublasLtMatmul with the key's descriptors (cublaslt/matmul.hpp, the same ones libkdispatch
// builds), the stored algorithm and the gate's guarded workspace.
#pragma once

#include <memory>
#include <variant>

#include "cublaslt/algo.hpp"
#include "cublaslt/matmul.hpp"
#include "eval/candidate.hpp"
#include "key/gemm_key.hpp"

namespace kd::eval {

class CublasLtCandidate final : public GateCandidate {
public:
  // Requires a current context (the evaluator's). load_failed when no cuBLASLt is loaded, when
  // another cuBLASLt version made the algorithm, when its bytes are not a cublasLtMatmulAlgo_t, or
  // when cublasLtMatmulAlgoCheck rejects it for this key. The workspace is the larger of what the
  // algorithm claims and what the check says.
  static std::variant<std::unique_ptr<CublasLtCandidate>, CandidateError> make(const GemmKey& key,
                                                                               const CublasLtAlgo& algo);

  std::uint64_t workspace_bytes() const override { return workspace_bytes_; }
  // Sets the bias pointer (epilogue=bias) and enqueues cublasLtMatmul; refused: its status.
  std::optional<std::string> launch(const KernelArgs& args, CUstream stream) const override;
  std::unique_ptr<GateCandidate> fresh() const override;

private:
  CublasLtCandidate(const CublasLtLibrary& lt, const GemmKey& key, const CublasLtAlgo& algo);
  const CublasLtLibrary* lt_;
  GemmKey key_;
  CublasLtAlgo spec_;
  LtHandle handle_;
  std::unique_ptr<LtMatmul> matmul_;  // set_bias writes it: launch() is const for the gate only
  cublasLtMatmulAlgo_t algo_{};
  std::uint64_t workspace_bytes_ = 0;
};

}  // namespace kd::eval
