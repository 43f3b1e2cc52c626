// What GET /status answers. The HTTP endpoint is loopback-only but answers every local user: a TCP
// peer has no SO_PEERCRED, so it cannot be admitted like a socket client (server/peer_access.hpp).
// It therefore gets the status object's counts and states only; the cache and socket paths, the
// keys of running and queued jobs and the search backend's message stay with socket clients
// (`kdctl status`). Fields are copied by an allow list, so a field added to the status object later
// stays private until it is listed here.
#pragma once

#include <nlohmann/json.hpp>

namespace kd::daemon {

nlohmann::json public_status(const nlohmann::json& status);

}  // namespace kd::daemon
