// Who may use the daemon (server/peer_access.hpp): the allowed_group setting, admission by uid and
// by primary or supplementary group, a real socket's credentials, and the group's access to the
// cache files.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "common/error.hpp"
#include "config/config.hpp"
#include "server/peer_access.hpp"
#include "support/temp_dir.hpp"

namespace kd::daemon {
namespace {

std::function<std::optional<std::string>(const std::string&)> env_of(
    std::map<std::string, std::string> vars) {
  vars.emplace("KD_CONFIG", "/dev/null");
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string load_error(std::map<std::string, std::string> vars) {
  try {
    load_config(CommandLine{}, env_of(std::move(vars)));
  } catch (const Error& e) {
    EXPECT_EQ(e.domain(), ErrorDomain::usage);
    return e.what();
  }
  return "no error";
}

TEST(PeerAccess, AllowedGroupIsANameOrGidAndNeedsAGroupSocketMode) {
  EXPECT_FALSE(load_config(CommandLine{}, env_of({})).allowed_gid.has_value());
  const Config by_gid = load_config(
      CommandLine{}, env_of({{"KD_ALLOWED_GROUP", "4242"}, {"KD_SOCKET_MODE", "0660"}}));
  EXPECT_EQ(by_gid.allowed_gid, gid_t{4242});
  const Config by_name = load_config(
      CommandLine{}, env_of({{"KD_ALLOWED_GROUP", "root"}, {"KD_SOCKET_MODE", "0660"}}));
  EXPECT_EQ(by_name.allowed_gid, gid_t{0});

  const std::string unknown = load_error({{"KD_ALLOWED_GROUP", "no-such-group-kd"}, {"KD_SOCKET_MODE", "0660"}});
  EXPECT_NE(unknown.find("no group named 'no-such-group-kd'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("groupadd"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("env KD_ALLOWED_GROUP"), std::string::npos) << unknown;

  const std::string closed = load_error({{"KD_ALLOWED_GROUP", "4242"}});  // socket_mode 0600
  EXPECT_NE(closed.find("socket_mode 0600"), std::string::npos) << closed;
  EXPECT_NE(closed.find("0660"), std::string::npos) << closed;
}

TEST(PeerAccess, AdmitsListedUidsAndMembersOfTheGroup) {
  Config c;
  c.allowed_uids = {1000, 0};
  const auto admission = [&](uid_t uid, gid_t gid, std::vector<gid_t> groups) {
    return admit(c, PeerIdentity{1, uid, gid, std::move(groups)});
  };
  EXPECT_EQ(admission(1000, 5, {}), Admission::by_uid);
  EXPECT_EQ(admission(2000, 4242, {4242}), Admission::refused);  // no group configured
  c.allowed_gid = 4242;
  EXPECT_EQ(admission(0, 1, {}), Admission::by_uid);
  EXPECT_EQ(admission(2000, 4242, {}), Admission::by_group);           // primary group
  EXPECT_EQ(admission(2000, 2000, {27, 4242}), Admission::by_group);   // supplementary
  EXPECT_EQ(admission(2000, 2000, {27, 4243}), Admission::refused);
  const std::string message = refusal_message(c, PeerIdentity{1, 2000, 2000, {}});
  EXPECT_NE(message.find("peer uid 2000 is not allowed"), std::string::npos) << message;
  EXPECT_NE(message.find("allowed_group"), std::string::npos) << message;
}

TEST(PeerAccess, ReadsTheKernelsCredentialsOfASocketPeer) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const auto read = read_peer_identity(fds[0]);
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_TRUE(std::holds_alternative<PeerIdentity>(read)) << std::get<std::string>(read);
  const PeerIdentity& peer = std::get<PeerIdentity>(read);
  EXPECT_EQ(peer.pid, ::getpid());
  EXPECT_EQ(peer.uid, ::geteuid());
  EXPECT_EQ(peer.gid, ::getegid());
  std::vector<gid_t> mine(static_cast<std::size_t>(::getgroups(0, nullptr)));
  ::getgroups(static_cast<int>(mine.size()), mine.data());
  auto theirs = peer.groups;
  std::sort(mine.begin(), mine.end());
  std::sort(theirs.begin(), theirs.end());
  EXPECT_EQ(theirs, mine);
}

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

TEST(PeerAccess, SharesTheCacheFilesWithTheGroupAndNothingElse) {
  test::TempDir dir;
  Config c;
  c.cache_dir = dir.path() / "cache";
  std::filesystem::create_directories(c.cache_dir);
  for (const char* name : {"data.mdb", "lock.mdb", "kdispatchd.lock"}) {
    std::ofstream(c.cache_dir / name) << "x";
    ::chmod((c.cache_dir / name).c_str(), 0600);
  }
  ::chmod(c.cache_dir.c_str(), 0700);
  share_cache_with_group(c);  // no allowed_group: nothing changes
  EXPECT_EQ(mode_of(c.cache_dir / "lock.mdb"), 0600u);

  c.allowed_gid = ::getegid();  // a group this process may always give its files to
  share_cache_with_group(c);
  EXPECT_EQ(mode_of(c.cache_dir), 0750u);
  EXPECT_EQ(mode_of(c.cache_dir / "data.mdb"), 0640u);
  EXPECT_EQ(mode_of(c.cache_dir / "lock.mdb"), 0660u);
  EXPECT_EQ(mode_of(c.cache_dir / "kdispatchd.lock"), 0600u);

  if (::geteuid() != 0) {  // root may give files to any group
    c.allowed_gid = ::getegid() + 4242;
    try {
      share_cache_with_group(c);
      ADD_FAILURE() << "gave the cache to a group this user is not in";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(c.cache_dir.string()), std::string::npos) << what;
      EXPECT_NE(what.find("member of the group"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace kd::daemon
