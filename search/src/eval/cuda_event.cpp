#include "eval/cuda_event.hpp"

#include "common/error.hpp"
#include "cuda/driver.hpp"

namespace kd::eval {

void EventDeleter::operator()(CUevent_st* e) const noexcept {
  if (e != nullptr) cu().cuEventDestroy(e);
}

Event make_event() {
  CUevent e = nullptr;
  KD_CU_CHECK(cu().cuEventCreate(&e, CU_EVENT_DEFAULT), "timing event");
  return Event(e);
}

void record(const Event& e, CUstream s) { KD_CU_CHECK(cu().cuEventRecord(e.get(), s), "event record"); }

double elapsed_us(const Event& start, const Event& end) {
  KD_CU_CHECK(cu().cuEventSynchronize(end.get()), "event wait");
  float ms = 0.0f;
  KD_CU_CHECK(cu().cuEventElapsedTime(&ms, start.get(), end.get()), "event elapsed");
  return static_cast<double>(ms) * 1000.0;
}

}  // namespace kd::eval
