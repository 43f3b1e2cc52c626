// kdctl import FILE: validates an archive from kdctl export and publishes its records.
// A damaged archive imports nothing; damaged or foreign records are rejected one by one.
// Afterwards the kdispatchd serving the cache, if any, is told (daemon_link.hpp).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "archive.hpp"
#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "daemon_link.hpp"
#include "kdctl.hpp"
#include "store/cache_store.hpp"
#include "table.hpp"

namespace kd::kdctl {
namespace {

struct ImportArgs {
  std::string cache_dir;
  std::string socket;
  std::string file;
  bool dry_run = false;
  bool create = false;  // start a new cache when the directory holds none
};

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int run_import(const ImportArgs& a) {
  const auto bytes = read_file(a.file);
  if (!bytes) {
    std::fprintf(stderr, "kdctl import: cannot read %s\n", a.file.c_str());
    return kFailure;
  }
  auto read = read_archive(*bytes);
  if (const auto* error = std::get_if<ArchiveError>(&read)) {
    std::fprintf(stderr, "kdctl import: %s rejected, nothing imported: %s\n", a.file.c_str(),
                 error->reason.c_str());
    return kFailure;
  }
  const Archive& archive = std::get<Archive>(read);
  const DevicePart& device = archive.header.device;
  std::printf("archive %s: %zu record(s) for \"%s\" (%s, %d SMs)\n", a.file.c_str(),
              archive.records.size(), device.gpu.c_str(), device.arch.c_str(), device.sms);
  std::fflush(stdout);  // before the writes, which may take a while

  const auto dir = resolve_cache_dir(a.cache_dir);
  std::optional<CacheWriter> writer;
  if (!a.dry_run) {
    // A misspelled --cache-dir must not quietly become a new cache nobody reads.
    if (!a.create && !std::filesystem::exists(dir / "data.mdb")) {
      std::fprintf(stderr,
                   "kdctl import: no kdispatch cache at %s (no data.mdb there), nothing imported: "
                   "check --cache-dir or KD_CACHE_DIR, or pass --create to start a new cache there\n",
                   dir.c_str());
      return kFailure;
    }
    writer.emplace(dir);
  }
  std::vector<std::string> written;
  Table table({{"#", Align::right}, {"RESULT"}, {"KEY"}, {"REASON"}});
  std::size_t imported = 0, rejected = 0;
  for (std::size_t i = 0; i < archive.records.size(); ++i) {
    auto checked = check_archived_record(archive.records[i], device);
    if (const auto* no = std::get_if<Rejected>(&checked)) {
      ++rejected;
      table.add({std::to_string(i), fmt::format("rejected ({})", to_string(no->reason)),
                 no->key_line.empty() ? "?" : no->key_line, no->detail});
      continue;
    }
    const Record& record = std::get<Record>(checked);
    const bool replaces = writer && writer->get_raw("records", record.key_line).has_value();
    if (writer) {
      writer->commit_record(record);
      written.push_back(record.key_line);
    }
    ++imported;
    table.add({std::to_string(i), a.dry_run ? "would import" : replaces ? "replaced" : "imported",
               record.key_line, ""});
  }
  std::fputs(table.render().c_str(), stdout);
  std::printf("%zu %s, %zu rejected\n", imported, a.dry_run ? "would be imported" : "imported", rejected);
  if (!written.empty()) {
    print_daemon_notice("kdctl import", tell_daemon_cache_changed(socket_of(DaemonArgs{a.socket, dir.string()}), dir, written));
  }
  return rejected > 0 ? kFailure : kOk;
}

}  // namespace

void setup_import(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_import);
  sub.add_option("file", a->file, "Archive written by kdctl export")->required();
  add_cache_dir_flag(sub, a->cache_dir);
  add_socket_flag(sub, a->socket);
  sub.add_flag("--create", a->create,
               "Start a new cache in --cache-dir when it holds none (without it, import refuses)");
  sub.add_flag("--dry-run", a->dry_run, "Validate and list only; write nothing");
  sub.footer("The archive's checksum is verified first (a damaged archive imports nothing); then each\n"
             "record, a GEMM's or a row operator's (rmsnorm, layernorm, softmax), must decode, parse and name the\n"
             "archive's GPU; a range record's plan (n=LO..HI) must serve every n of it, and a row operator's record\n"
             "must be a kernel with an exact plan or a verdict, or it is rejected with the reason.\n"
             "Records replace ones stored under the same key; each write bumps the cache generation\n"
             "(LMDB serializes this writer with the daemon's). When a kdispatchd serves the cache (found on\n"
             "--socket), kdctl then tells it, and it pushes the new generation to its subscribed processes,\n"
             "which load the records at once; the last line says whether a daemon was told.\n"
             "Exit codes: 0 all imported, 1 unreadable or damaged archive, no cache in --cache-dir\n"
             "(without --create), or any record rejected, 2 usage.\n");
}

}  // namespace kd::kdctl
