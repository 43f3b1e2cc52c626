// Probing a Unix stream socket from a test.
#pragma once

#include <filesystem>

namespace kd::test {

// Whether a connect() to `socket` succeeds now (something listens there); the connection is closed.
bool accepts_connections(const std::filesystem::path& socket);

}  // namespace kd::test
