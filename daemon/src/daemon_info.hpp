// What this build of kdispatchd can do; grows as the daemon lands.
#pragma once

#include <string>

namespace kd::daemon {

// One line for users: which parts of the daemon are not built yet, or empty when all are.
std::string missing_capabilities();

}  // namespace kd::daemon
