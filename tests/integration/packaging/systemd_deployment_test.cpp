// The systemd deployment as `cmake --install` lays it down (packaging/): installed into a temporary
// prefix, the unit passes `systemd-analyze verify`, the sysusers.d entry makes the kdispatch user
// and group, and - as root, which CI is - the unit's ExecStart= runs the way systemd would run it
// (its User=, Group=, UMask=, Environment= and the directories it asks for, under temporary roots
// for %C and %t) while a user who is only a member of the group reads the cache and hits a record
// through the shim's call path, and uses the socket; a user outside the group can do neither.
#include <gtest/gtest.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launch_as.hpp"
#include "store/cache_store.hpp"
#include "support/temp_dir.hpp"
#include "support/text_file.hpp"
#include "support/unix_socket.hpp"
#include "unit/libdispatch/store/test_records.hpp"
#include "unit_file.hpp"

namespace kd::test {
namespace {

namespace fs = std::filesystem;

const fs::path kBuildDir = KD_BUILD_DIR;
const fs::path kCmake = KD_CMAKE_COMMAND;
const fs::path kCacheHookShim = KD_CACHEHOOK_SHIM_PATH;
const fs::path kLibKdispatch = KD_LIBKDISPATCH_SONAME_PATH;  // libkdispatch.so.0, the shim's dependency
const fs::path kShimDriver = KD_SHIM_DRIVER_PATH;
const fs::path kScenariosLib = KD_SCENARIOS_LIB_PATH;
const fs::path kFakeCublasDir = KD_FAKE_CUBLAS_DIR;

const char* const kDevicePart = "arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";
const char* const kSystemPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::optional<fs::path> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  for (const char* dir : {"/usr/sbin", "/sbin"}) {
    const fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// Runs a command as this process's user (argv[0] absolute); stdout and stderr together.
Finished run_here(const fs::path& scratch, std::vector<std::string> argv,
                  std::vector<std::string> env = {kSystemPath}) {
  Credentials self{::geteuid(), ::getegid(), {}};
  std::vector<gid_t> groups(static_cast<std::size_t>(::getgroups(0, nullptr)));
  ::getgroups(static_cast<int>(groups.size()), groups.data());
  self.groups = groups;
  const bool can_set_groups = ::geteuid() == 0;
  if (!can_set_groups) {
    // Without root, setgroups fails even to the same set: run through the shell's exec instead.
    std::string cmd;
    for (const auto& a : argv) cmd += "'" + a + "' ";
    cmd += "> '" + (scratch / "run_here.txt").string() + "' 2>&1";
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, read_text(scratch / "run_here.txt")};
  }
  return run(Launch{std::move(argv), std::move(env), self, 022, "/", scratch / "run_here.txt"});
}

// The tree `cmake --install --prefix <root>/usr` lays down, and where its unit points.
struct Installed {
  fs::path prefix, unit, sysusers;
  Finished install;
};

Installed install_into(const fs::path& root) {
  Installed i;
  i.prefix = root / "usr";
  i.unit = i.prefix / "lib/systemd/system/kdispatchd.service";
  i.sysusers = i.prefix / "lib/sysusers.d/kdispatch.conf";
  i.install = run_here(root, {kCmake.string(), "--install", kBuildDir.string(), "--prefix",
                              i.prefix.string()});
  return i;
}

TEST(SystemdDeployment, InstallLaysDownWhatTheUnitNames) {
  TempDir tmp;
  const Installed in = install_into(tmp.path());
  ASSERT_EQ(in.install.exit_code, 0) << in.install.output;
  const UnitFile unit(in.unit);
  const auto exec = split_words(unit.get("Service", "ExecStart").value_or(""));
  ASSERT_EQ(exec.size(), 3u) << "ExecStart=" << unit.get("Service", "ExecStart").value_or("");
  EXPECT_EQ(exec[0], (in.prefix / "bin/kdispatchd").string());
  EXPECT_EQ(exec[1], "--config");
  // sysconfdir is <prefix>/etc except for the prefixes /usr and / (GNUInstallDirs).
  EXPECT_EQ(exec[2], (in.prefix / "etc/kdispatch/kdispatchd.toml").string());
  for (const fs::path& p :
       {fs::path(exec[0]), fs::path(exec[2]), in.prefix / "bin/kdctl", in.prefix / "bin/kdispatch-worker",
        in.prefix / "lib/libkdispatch.so", in.prefix / "lib/libkdispatch_cublas.so",
        in.prefix / "include/kdispatch/kdispatch.h", in.sysusers,
        in.prefix / "share/doc/kdispatch/PROTOCOL.md"})
    EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_EQ(unit.get("Service", "User"), "kdispatch");
  EXPECT_EQ(unit.get("Service", "UMask"), "0027");

  // An edited configuration survives a second install; the packaged one goes beside it.
  const fs::path config = exec[2];
  std::ofstream(config, std::ios::app) << "log_level = \"debug\"\n";
  const Installed again = install_into(tmp.path());
  ASSERT_EQ(again.install.exit_code, 0) << again.install.output;
  EXPECT_NE(read_text(config).find("log_level = \"debug\""), std::string::npos);
  EXPECT_TRUE(fs::exists(config.parent_path() / "kdispatchd.toml.dist"));
}

TEST(SystemdDeployment, InstalledUnitPassesSystemdAnalyzeVerify) {
  const auto analyze = find_program("systemd-analyze");
  if (!analyze)
    GTEST_SKIP() << "systemd-analyze is not installed (Debian package systemd, which "
                    "tools/dev/install-deps.sh installs)";
  TempDir tmp;
  const Installed in = install_into(tmp.path());
  ASSERT_EQ(in.install.exit_code, 0) << in.install.output;
  const Finished verify = run_here(tmp.path(), {analyze->string(), "verify", "--man=no", in.unit.string()});
  EXPECT_EQ(verify.exit_code, 0) << verify.output;
  // verify reports problems with a unit as lines naming it, also when it exits 0.
  EXPECT_EQ(verify.output.find("kdispatchd.service"), std::string::npos) << verify.output;
}

TEST(SystemdDeployment, SysusersEntryMakesTheUserAndGroup) {
  const auto sysusers = find_program("systemd-sysusers");
  if (!sysusers)
    GTEST_SKIP() << "systemd-sysusers is not installed (Debian package systemd, which "
                    "tools/dev/install-deps.sh installs)";
  if (::geteuid() != 0) GTEST_SKIP() << "systemd-sysusers --root writes files owned by root";
  TempDir tmp;
  const Installed in = install_into(tmp.path());
  ASSERT_EQ(in.install.exit_code, 0) << in.install.output;
  const fs::path root = tmp.path() / "root";
  fs::create_directories(root / "etc");
  const Finished made = run_here(tmp.path(), {sysusers->string(), "--root=" + root.string(),
                                              in.sysusers.string()});
  ASSERT_EQ(made.exit_code, 0) << made.output;
  EXPECT_NE(("\n" + read_text(root / "etc/passwd")).find("\nkdispatch:"), std::string::npos)
      << read_text(root / "etc/passwd");
  EXPECT_NE(("\n" + read_text(root / "etc/group")).find("\nkdispatch:"), std::string::npos)
      << read_text(root / "etc/group");
}

// ---- The service run as the unit runs it ----

// Serializes the tests of this file that create system users across processes (ctest -j).
class HostLock {
public:
  HostLock() : fd_(::open("/tmp/kdispatch-deployment-test.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~HostLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  HostLock(const HostLock&) = delete;
  HostLock& operator=(const HostLock&) = delete;

private:
  int fd_;
};

// A system user (and its group) created for the test and removed afterwards; one that already
// exists is used as it is and kept.
class SystemUser {
public:
  // `make` creates the user; runs only when `name` does not exist yet.
  SystemUser(const std::string& name, const std::function<Finished()>& make) : name_(name) {
    if (::getpwnam(name.c_str()) != nullptr) return;
    const Finished made = make();
    if (made.exit_code != 0 || ::getpwnam(name.c_str()) == nullptr)
      throw std::runtime_error("cannot create the user " + name + ": " + made.output);
    created_ = true;
  }
  ~SystemUser() {
    if (!created_) return;
    const std::string cmd = "userdel '" + name_ + "' >/dev/null 2>&1; groupdel '" + name_ +
                            "' >/dev/null 2>&1";
    (void)!std::system(cmd.c_str());
  }
  SystemUser(const SystemUser&) = delete;
  SystemUser& operator=(const SystemUser&) = delete;

private:
  std::string name_;
  bool created_ = false;
};

// SIGKILLs and reaps the daemon if the test ends early.
struct ChildGuard {
  pid_t pid = -1;
  ~ChildGuard() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      wait_for(pid, std::chrono::seconds(5));
    }
  }
};

mode_t octal(const std::string& text) { return static_cast<mode_t>(std::stoul(text, nullptr, 8)); }

struct FileState {
  mode_t mode = 0;
  gid_t gid = 0;
};
FileState state_of(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return {};
  return {static_cast<mode_t>(st.st_mode & 07777), st.st_gid};
}

// Copies what the client needs (driver, "application" library, stand-in cuBLAS, shim and the
// libkdispatch.so it links) to a directory every user can read, since the build tree may not be.
fs::path stage_client_programs(const fs::path& dir) {
  fs::create_directories(dir);
  for (const fs::path& p : {kShimDriver, kScenariosLib, kCacheHookShim, kLibKdispatch})
    fs::copy_file(p, dir / p.filename());
  for (const auto& entry : fs::directory_iterator(kFakeCublasDir))
    if (entry.path().filename().string().find(".so.") != std::string::npos)
      fs::copy_file(entry.path(), dir / entry.path().filename());  // follows the soname links
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  return dir;
}

TEST(SystemdDeployment, GroupMemberReadsTheCacheAndUsesTheSocketOfTheServiceAsTheUnitRunsIt) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root (CI runs as root): the daemon runs as the unit's User= and a "
                    "client as a member of its group, which only root can arrange";
  const HostLock host_lock;
  TempDir tmp;
  fs::permissions(tmp.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const Installed in = install_into(tmp.path());
  ASSERT_EQ(in.install.exit_code, 0) << in.install.output;
  const UnitFile unit(in.unit);
  const auto setting = [&](const char* key) {
    const auto v = unit.get("Service", key);
    if (!v) throw std::runtime_error(std::string("the unit has no ") + key + "=");
    return *v;
  };
  const std::string user = setting("User"), group = setting("Group");

  // The unit's user and group, as the installed sysusers.d entry makes them.
  const auto sysusers = find_program("systemd-sysusers");
  const SystemUser service_user(user, [&] {
    if (sysusers) return run_here(tmp.path(), {sysusers->string(), in.sysusers.string()});
    const auto useradd = find_program("useradd");
    return run_here(tmp.path(), {useradd.value_or("useradd").string(), "--system", "--user-group",
                                 "--no-create-home", "--shell", "/usr/sbin/nologin", user});
  });
  // The inference server's user: a member of the group, nothing more.
  const std::string client = "kdtc" + std::to_string(::getpid());
  const SystemUser client_user(client, [&] {
    return run_here(tmp.path(), {find_program("useradd").value_or("useradd").string(), "--system",
                                 "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin",
                                 "--groups", group, client});
  });
  const Credentials daemon_creds = credentials_of(user, group);
  const Credentials client_creds = credentials_of(client);
  const Credentials outsider{65534, 65534, {65534}};  // nobody

  // The directories systemd makes before ExecStart=: %t/<RuntimeDirectory>, %C/<CacheDirectory>,
  // owned by User=:Group= with their modes.
  const std::map<char, std::string> roots = {{'t', (tmp.path() / "run").string()},
                                             {'C', (tmp.path() / "var/cache").string()}};
  const auto make_service_dir = [&](char root, const char* name_key, const char* mode_key) {
    const fs::path dir = fs::path(roots.at(root)) / setting(name_key);
    fs::create_directories(dir);
    EXPECT_EQ(::chown(dir.c_str(), daemon_creds.uid, daemon_creds.gid), 0);
    EXPECT_EQ(::chmod(dir.c_str(), octal(setting(mode_key))), 0);
    return dir;
  };
  const fs::path runtime_dir = make_service_dir('t', "RuntimeDirectory", "RuntimeDirectoryMode");
  const fs::path cache_root_dir = make_service_dir('C', "CacheDirectory", "CacheDirectoryMode");

  // The environment systemd gives a service, then the unit's Environment= lines.
  std::vector<std::string> env = {kSystemPath, "USER=" + user, "LOGNAME=" + user, "HOME=/",
                                  "SHELL=/usr/sbin/nologin", "RUNTIME_DIRECTORY=" + runtime_dir.string(),
                                  "CACHE_DIRECTORY=" + cache_root_dir.string()};
  std::map<std::string, std::string> unit_env;
  for (const auto& line : unit.all("Service", "Environment"))
    for (const auto& word : split_words(expand_specifiers(line, roots))) {
      env.push_back(word);
      unit_env[word.substr(0, word.find('='))] = word.substr(word.find('=') + 1);
    }
  // The one departure: the packaged configuration's fixed metrics port could be taken on a test
  // machine (a real daemon, a parallel test), so the endpoint stays closed here.
  env.push_back("KD_METRICS_LISTEN=off");
  ASSERT_TRUE(unit_env.count("KD_CACHE_DIR") && unit_env.count("KD_SOCKET"));
  const fs::path cache_dir = unit_env["KD_CACHE_DIR"], socket_path = unit_env["KD_SOCKET"];
  EXPECT_EQ(cache_dir, cache_root_dir);

  ChildGuard daemon;
  daemon.pid = spawn(Launch{split_words(expand_specifiers(setting("ExecStart"), roots)), env,
                            daemon_creds, octal(setting("UMask")), "/", tmp.path() / "daemon.log"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!accepts_connections(socket_path)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << read_text(tmp.path() / "daemon.log");
    ASSERT_EQ(::kill(daemon.pid, 0), 0) << read_text(tmp.path() / "daemon.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  // What the group may touch, and nothing more.
  const gid_t gid = daemon_creds.gid;
  EXPECT_EQ(state_of(socket_path).mode, 0660u);
  EXPECT_EQ(state_of(socket_path).gid, gid);
  EXPECT_EQ(state_of(runtime_dir).mode, 0750u);
  EXPECT_EQ(state_of(cache_dir).mode, 02750u);
  EXPECT_EQ(state_of(cache_dir / "data.mdb").mode, 0640u);
  EXPECT_EQ(state_of(cache_dir / "data.mdb").gid, gid);
  EXPECT_EQ(state_of(cache_dir / "lock.mdb").mode, 0660u);
  EXPECT_EQ(state_of(cache_dir / "lock.mdb").gid, gid);

  // A record, exported from another cache and imported as the daemon's user (the README's
  // `sudo -u kdispatch kdctl import`) while the daemon runs.
  const std::string key = key_for(0);
  {
    CacheWriter scratch(tmp.path() / "scratch");
    scratch.commit_record(make_record(0, key));
  }
  const fs::path kdctl = in.prefix / "bin/kdctl", archive = tmp.path() / "h100.kda";
  const Finished exported = run_here(tmp.path(), {kdctl.string(), "export", "--cache-dir",
                                                  (tmp.path() / "scratch").string(), "--gpu", "H100",
                                                  "-o", archive.string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  ::chmod(archive.c_str(), 0644);
  const Finished imported = run(Launch{{kdctl.string(), "import", archive.string(), "--cache-dir",
                                        cache_dir.string()},
                                       {kSystemPath}, daemon_creds, octal(setting("UMask")), "/",
                                       tmp.path() / "import.log"});
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  EXPECT_NE(imported.output.find("1 imported, 0 rejected"), std::string::npos) << imported.output;

  // The inference server: the shim's whole call path, the lookup answered from the cache.
  const fs::path programs = stage_client_programs(tmp.path() / "client");
  const auto application = [&](const Credentials& who, const char* log) {
    return run(Launch{{(programs / kShimDriver.filename()).string(), "all"},
                      {kSystemPath, "KD_CACHE_DIR=" + cache_dir.string(),
                       "KD_SOCKET=" + socket_path.string(), std::string("KD_TEST_DEVICE=") + kDevicePart,
                       "KD_STATS=1", "LD_LIBRARY_PATH=" + programs.string(),
                       "LD_PRELOAD=" + (programs / kCacheHookShim.filename()).string()},
                      who, 022, "/", tmp.path() / log});
  };
  const Finished member = application(client_creds, "member.log");
  ASSERT_EQ(member.exit_code, 0) << member.output;
  EXPECT_NE(member.output.find("HIT " + key + " proposer=builtin\n"), std::string::npos) << member.output;
  EXPECT_NE(member.output.find("kdispatch_cublas: hits=1 misses=9"), std::string::npos) << member.output;
  const auto status_as = [&](const Credentials& who, const char* log) {
    return run(Launch{{kdctl.string(), "status", "--socket", socket_path.string()}, {kSystemPath},
                      who, 022, "/", tmp.path() / log});
  };
  const Finished member_status = status_as(client_creds, "member-status.log");
  EXPECT_EQ(member_status.exit_code, 0) << member_status.output << read_text(tmp.path() / "daemon.log");

  // Someone outside the group: no record, no socket.
  const Finished stranger = application(outsider, "outsider.log");
  ASSERT_EQ(stranger.exit_code, 0) << stranger.output;
  EXPECT_EQ(stranger.output.find("HIT "), std::string::npos) << stranger.output;
  EXPECT_NE(stranger.output.find("MISS " + key + " cache_unavailable"), std::string::npos) << stranger.output;
  EXPECT_NE(status_as(outsider, "outsider-status.log").exit_code, 0);

  // SIGTERM, as systemctl stop sends it: a clean exit.
  ASSERT_EQ(::kill(daemon.pid, SIGTERM), 0);
  EXPECT_EQ(wait_for(daemon.pid, std::chrono::seconds(30)), 0) << read_text(tmp.path() / "daemon.log");
  daemon.pid = -1;
}

}  // namespace
}  // namespace kd::test
