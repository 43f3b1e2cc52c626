// What the job queue's tests share: job_key(n) (a bf16 nn.Linear shape with n = `n` on an H100)
// and the queue's misses reported synchronously (waiting for the commit).
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "queue/job_queue.hpp"

namespace kd::test {

inline std::string job_key(int n) {
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=" + std::to_string(n) +
         " k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1 arch=sm_90 "
         "gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
}

inline void misses_sync(daemon::JobQueue& q, std::vector<daemon::MissReport> m) {
  std::promise<daemon::CommitResult> p;
  q.report_misses(std::move(m), [&](const daemon::CommitResult& r) { p.set_value(r); });
  ASSERT_TRUE(p.get_future().get().committed);
}

}  // namespace kd::test
