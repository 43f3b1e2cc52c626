#include "protocol/requests.hpp"

namespace kd::protocol {

void JobsQuery::check(const JobsQuery& m) {
  if (m.keys.size() > kMaxJobsPerRequest)
    field::fail("protocol: jobs asks for " + std::to_string(m.keys.size()) + " keys; at most " +
                std::to_string(kMaxJobsPerRequest) + " per request");
}

}  // namespace kd::protocol
