// CUevent as a move-only handle, and elapsed time between two recorded events.
#pragma once

#include <cuda.h>

#include <memory>

namespace kd::eval {

struct EventDeleter {
  void operator()(CUevent_st* e) const noexcept;
};
using Event = std::unique_ptr<CUevent_st, EventDeleter>;

Event make_event();  // timing-enabled; throws kd::Error
void record(const Event& e, CUstream s);
// Waits for `end`, returns microseconds from `start` to `end`.
double elapsed_us(const Event& start, const Event& end);

}  // namespace kd::eval
