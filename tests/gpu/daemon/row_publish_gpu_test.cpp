// Issue 33: row operators through the real daemon on a GPU. kdctl prewarm queues two row lines;
// kdispatchd searches each with the builtin proposer (row_reduce), gates the candidates in
// kdispatch-worker against the row baseline, and publishes a record per line: an nvrtc_kernel with
// cubin, source, plan and validation report, or a vendor verdict. kdctl ls lists them.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctl_client/ctl_client.hpp"
#include "cuda/device.hpp"
#include "daemon_process.hpp"
#include "kdctl_runner.hpp"
#include "key/row_key.hpp"
#include "store/cache_store.hpp"
#include "support/gpu.hpp"
#include "support/temp_dir.hpp"

namespace kd::test {
namespace {

const std::vector<std::string> kRowLines = {
    "layernorm dtype=f32 rows=4096 cols=1024 weight=1 bias=1",
    "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1",
};

TEST(RowPublishOnGpu, PrewarmedRowLinesArePublished) {
  KD_REQUIRE_GPU();
  TempDir dir;
  DaemonProcess daemon(dir.path(), {}, "budget_rounds = 1\nbudget_candidates = 8\n");
  std::string list;
  for (const std::string& line : kRowLines) list += line + "\n";
  write_text(dir.path() / "rows.txt", list);
  TempDir scratch;
  const KdctlRun run = run_kdctl(scratch.path(), {"prewarm", (dir.path() / "rows.txt").string(), "--socket",
                                                  daemon.socket().string(), "--timeout", "600"});
  ASSERT_EQ(run.rc, 0) << run.out << run.err << daemon.log();
  EXPECT_NE(run.out.find("queued 2 shapes"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("layernorm"), std::string::npos) << "the table names the row op:\n" << run.out;

  const DeviceInfo dev = query_device(0);
  CacheReader reader(daemon.cache_dir());
  reader.refresh();
  for (const std::string& line : kRowLines) {
    const auto parsed = parse_op_key(line);
    const RowKey& key = std::get<RowKey>(std::get<OpKey>(parsed));
    const std::string full = key.with_device({dev.arch, dev.name, dev.sms}).full_line();
    const auto hit = reader.lookup(full);
    const Record* r = std::get_if<Record>(&hit);
    ASSERT_NE(r, nullptr) << "no record for " << full << "\n" << daemon.log();
    EXPECT_EQ(r->key_line, full);
    if (r->kind == RecordKind::nvrtc_kernel) {
      EXPECT_FALSE(r->cubin.empty());
      EXPECT_FALSE(r->source.empty());
      EXPECT_NE(r->source.find("row_reduce"), std::string::npos);
      EXPECT_FALSE(r->plan.launches.empty());
      EXPECT_EQ(r->alignment_bytes, 16u);
      EXPECT_GT(r->candidate_us, 0);
      EXPECT_GT(r->baseline_us, r->candidate_us);
      EXPECT_FALSE(r->validation_report.empty());
      EXPECT_EQ(r->proposer, "builtin");
    } else {
      EXPECT_EQ(r->kind, RecordKind::vendor) << full;
      EXPECT_FALSE(r->idea.empty()) << "a verdict says why";
    }
    std::printf("%s: %s (%.2f us vs baseline %.2f us)\n", full.c_str(), std::string(to_string(r->kind)).c_str(),
                r->candidate_us, r->baseline_us);
  }
  EXPECT_GE(daemon::Client::status(daemon.socket()).generation, 2u) << "each record bumps the generation";

  const KdctlRun ls = run_kdctl(scratch.path(), {"ls", "--cache-dir", daemon.cache_dir().string(), "--json"});
  ASSERT_EQ(ls.rc, 0) << ls.err;
  const nlohmann::json listed = nlohmann::json::parse(ls.out);
  std::size_t rows = 0;
  for (const auto& item : listed)
    for (const std::string& line : kRowLines) rows += item.at("shape") == line ? 1 : 0;
  EXPECT_EQ(rows, kRowLines.size()) << ls.out;
}

}  // namespace
}  // namespace kd::test
