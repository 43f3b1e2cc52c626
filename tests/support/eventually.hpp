// Waits for a condition another process or thread makes true: polls every 10 ms until it holds or
// the timeout passes. The timeout only bounds how long a failing test waits.
#pragma once

#include <chrono>
#include <thread>

namespace kd::test {

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

}  // namespace kd::test
