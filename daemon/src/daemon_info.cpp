#include "daemon_info.hpp"

namespace kd::daemon {

std::string missing_capabilities() {
  return "the socket server, job queue and search are not implemented yet";
}

}  // namespace kd::daemon
