// Who may use this daemon: the admission of socket peers (SO_PEERCRED's uid and gid, and
// SO_PEERGROUPS' supplementary groups, against allowed_uids and allowed_group) and the group's
// access to the files it needs (the socket; the cache's data.mdb to read and lock.mdb for LMDB's
// reader table). daemon/PROTOCOL.md ("Transport") and README ("Deploying with systemd") describe
// the rules for users.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "config/config.hpp"

namespace kd::daemon {

// The credentials of a connected Unix-socket peer, as the kernel recorded them at connect().
struct PeerIdentity {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;               // primary group
  std::vector<gid_t> groups;   // supplementary groups (empty where the kernel cannot tell)
};

// Reads SO_PEERCRED and SO_PEERGROUPS of a connected socket. Kernels before 4.13 have no
// SO_PEERGROUPS: groups is then empty, so only a primary group can match allowed_group. Returns
// the reason in words when SO_PEERCRED fails.
std::variant<PeerIdentity, std::string> read_peer_identity(int socket_fd);

enum class Admission { by_uid, by_group, refused };

// by_uid when the peer's uid is in allowed_uids, else by_group when allowed_group is set and is the
// peer's primary or one of its supplementary groups, else refused.
Admission admit(const Config& config, const PeerIdentity& peer);

// The message a refused peer gets in its error frame (names the uid and the settings to change).
std::string refusal_message(const Config& config, const PeerIdentity& peer);

// With allowed_group set, gives `socket_path` to the group (its mode is socket_mode already). Throws
// kd::Error (usage) when the daemon may not: it must run as root or be a member of the group.
void give_socket_to_group(const Config& config, const std::filesystem::path& socket_path);

// With allowed_group set, lets its members read the cache in config.cache_dir, which must already
// exist: the directory becomes group-owned and group-readable and searchable; data.mdb
// group-readable; lock.mdb group-readable and writable, since LMDB readers record their snapshots
// in it (without it they would fall back to MDB_NOLOCK, whose snapshots a concurrent commit can
// tear). Nothing in the cache becomes group-writable but the lock file. The set-gid bit on the
// directory is left to whoever creates it (the unit's CacheDirectoryMode): under systemd's
// RestrictSUIDSGID the daemon may not set it. Only missing bits are changed, so a directory an
// administrator prepared needs no privilege. Does nothing without allowed_group. Throws kd::Error
// (usage) naming the file when a change is not permitted.
void share_cache_with_group(const Config& config);

}  // namespace kd::daemon
