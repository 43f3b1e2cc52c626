// kdctl search's proposer selection and its dry run with the cublaslt proposer, which needs no
// compile and no GPU: it must say that cuBLASLt enumeration needs a GPU rather than fail obscurely.
#include <gtest/gtest.h>

#include "kdctl_runner.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

constexpr const char* kKey =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
    "epilogue=none beta0=1";

TEST(KdctlSearch, CublasLtDryRunSaysEnumerationNeedsAGpu) {
  TempDir dir;
  const KdctlRun r = run_kdctl(dir.path(), {"search", "--key", kKey, "--proposer", "cublaslt", "--dry-run"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("cublaslt enumeration needs a GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("needs_gpu"), std::string::npos) << "the tree records the fate:\n" << r.out;
}

TEST(KdctlSearch, UnknownOrRepeatedProposerIsAUsageError) {
  TempDir dir;
  KdctlRun r = run_kdctl(dir.path(), {"search", "--key", kKey, "--proposer", "builtin,cublas", "--dry-run"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown proposer 'cublas'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cublaslt"), std::string::npos) << "the message lists the known proposers: " << r.err;
  r = run_kdctl(dir.path(), {"search", "--key", kKey, "--proposer", "cublaslt,cublaslt", "--dry-run"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("given twice"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kd::test
