// A thread-local reentrancy guard. libcublas calls cublasLtMatmul itself (through its dynamic
// symbol, so the shim's definition receives it): a call that arrives while this thread is already
// inside an interposed symbol is cuBLAS's own and is forwarded untouched, never keyed twice.
#pragma once

namespace kd::shim {

class ReentrancyGuard {
public:
  ReentrancyGuard() noexcept { ++depth_; }
  ~ReentrancyGuard() { --depth_; }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;

  // True while this thread is inside an interposed symbol.
  static bool active() noexcept { return depth_ > 0; }

private:
  static inline thread_local int depth_ = 0;
};

}  // namespace kd::shim
