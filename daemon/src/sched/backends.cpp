#include "sched/job_runner.hpp"

namespace kd::daemon {

// One entry per search backend goes here once the branching search (issue 5) implements
// JobRunner over search/src/eval's WorkerClient. Until then there is none: jobs stay queued.
Backends make_backends(const Config& config) {
  Backends b;
  if (config.workers == "none") {
    b.why_none = "no search backend: workers = none";
  } else {
    b.why_none =
        "no search backend: the branching search is not built into this kdispatchd; jobs stay "
        "queued";
  }
  return b;
}

}  // namespace kd::daemon
