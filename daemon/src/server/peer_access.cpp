#include "server/peer_access.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::daemon {
namespace {

bool contains(const auto& list, auto value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// Gives `path` to group `gid` and adds the permission bits `add`; changes nothing already so, so a
// directory an administrator prepared needs no privilege.
void grant(const std::filesystem::path& path, gid_t gid, mode_t add) {
  const auto refuse = [&](const char* what) {
    const int err = errno;
    throw Error(ErrorDomain::usage, err,
                fmt::format("allowed_group: cannot {} {} (gid {}): {}; the daemon's user must own "
                            "it and be a member of the group, or run as root",
                            what, path.string(), gid, std::strerror(err)));
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) refuse("find");
  if (st.st_gid != gid) {
    if (::chown(path.c_str(), static_cast<uid_t>(-1), gid) != 0) refuse("give the group");
    if (::stat(path.c_str(), &st) != 0) refuse("find");  // chown may have cleared set-gid
  }
  const mode_t mode = st.st_mode & 07777;
  if ((mode | add) != mode && ::chmod(path.c_str(), mode | add) != 0) refuse("open to the group");
}

}  // namespace

std::variant<PeerIdentity, std::string> read_peer_identity(int socket_fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return fmt::format("SO_PEERCRED failed ({})", std::strerror(errno));
  PeerIdentity peer{cred.pid, cred.uid, cred.gid, {}};
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
      groups.resize(bytes / sizeof(gid_t));
      peer.groups = std::move(groups);
      break;
    }
    if (errno != ERANGE) break;  // ENOPROTOOPT before Linux 4.13: primary group only
    groups.resize(bytes / sizeof(gid_t));  // the kernel wrote the size it needs
  }
  return peer;
}

Admission admit(const Config& config, const PeerIdentity& peer) {
  if (contains(config.allowed_uids, peer.uid)) return Admission::by_uid;
  if (config.allowed_gid &&
      (peer.gid == *config.allowed_gid || contains(peer.groups, *config.allowed_gid)))
    return Admission::by_group;
  return Admission::refused;
}

std::string refusal_message(const Config& config, const PeerIdentity& peer) {
  return fmt::format("peer uid {} is not allowed by this daemon: its operator admits uids with "
                     "allowed_uids{}",
                     peer.uid,
                     config.allowed_gid ? " and members of the group allowed_group names" : "");
}

void give_socket_to_group(const Config& config, const std::filesystem::path& socket_path) {
  if (!config.allowed_gid) return;
  if (::chown(socket_path.c_str(), static_cast<uid_t>(-1), *config.allowed_gid) != 0) {
    const int err = errno;
    throw Error(ErrorDomain::usage, err,
                fmt::format("allowed_group: cannot give the socket {} to gid {}: {}; run the "
                            "daemon as a member of that group (systemd: Group= or "
                            "SupplementaryGroups=) or as root",
                            socket_path.string(), *config.allowed_gid, std::strerror(err)));
  }
}

void share_cache_with_group(const Config& config) {
  if (!config.allowed_gid) return;
  const gid_t gid = *config.allowed_gid;
  grant(config.cache_dir, gid, S_IRGRP | S_IXGRP);
  grant(config.cache_dir / "data.mdb", gid, S_IRGRP);
  grant(config.cache_dir / "lock.mdb", gid, S_IRGRP | S_IWGRP);
}

}  // namespace kd::daemon
