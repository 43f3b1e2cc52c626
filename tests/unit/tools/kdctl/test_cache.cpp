#include "test_cache.hpp"

#include "store/cache_store.hpp"
#include "tree/search_tree.hpp"

namespace kd::test {
namespace {
// The Unix time `age` before now, as a record's created_unix_s.
std::int64_t unix_seconds_ago(std::chrono::seconds age) {
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  return (now - age).count();
}
}  // namespace

std::string bf16_shape(int m) {
  const std::string ms = std::to_string(m);
  return "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=" + ms +
         " n=16 k=4096 lda=4096 ldb=4096 ldc=" + ms + " batch=1 epilogue=none beta0=1";
}

std::string f32_shape() {
  return "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=64 k=64 lda=64 ldb=64 ldc=64 batch=1 "
         "epilogue=none beta0=0";
}

Record test_record(const std::string& key_line, std::chrono::seconds age, std::size_t payload_bytes) {
  Record r;
  r.key_line = key_line;
  r.cubin = std::string("\x7f" "ELF\0\0", 6) + std::string(payload_bytes, '\x5a');
  r.ptx = ".version 9.0\n.target sm_90\n";
  r.source = "// kdispatch:plan {\"launches\":[{\"entry\":\"kd_main\",\"grid\":[8,1,1],\"block\":[256,1,1],"
             "\"smem\":0}],\"workspace\":0}\nextern \"C\" __global__ void kd_main(kd_gemm_args a) {}\n";
  r.plan.launches.push_back({"kd_main", {8, 1, 1}, {256, 1, 1}, 0});
  r.candidate_us = 10.0;
  r.baseline_us = 12.5;
  r.sm_clock_mhz = 1980;
  r.validation_report = R"({"trials":5,"max_rel":0.001})";
  r.search_id = "search-a";
  r.proposer = "builtin";
  r.idea = kWinnerIdea;
  r.nvrtc_version = "13.0";
  r.driver_version = 13000;
  r.cublas_version = 130100;
  r.created_unix_s = unix_seconds_ago(age);
  return r;
}

void make_test_cache(const std::filesystem::path& dir) {
  using std::chrono::hours;
  CacheWriter writer(dir);
  const Record winner = test_record(full(bf16_shape(4096), kH100), hours(2));
  writer.commit_record(winner);
  writer.commit_record(test_record(full(bf16_shape(8192), kH100), hours(30)));
  writer.commit_record(test_record(full(f32_shape(), kH100), hours(1)));
  writer.commit_record(test_record(full(bf16_shape(4096), kH200), hours(3)));

  search::SearchTree tree("search-a", winner.key_line);
  search::Node seed;
  seed.proposer = "builtin";
  seed.family = "skinny_mma";
  seed.idea = "seed: family default";
  seed.verdict = "not_faster";
  seed.candidate_us = 13.0;
  seed.baseline_us = 12.5;
  const int seed_id = tree.add(seed);
  tree.close_round(0);
  search::Node good = seed;
  good.parent = seed_id;
  good.round = 1;
  good.idea = kWinnerIdea;
  good.source = winner.source;
  good.source_hash = search::source_hash(winner.source);
  good.verdict = "passed";
  good.candidate_us = 10.0;
  tree.add(good);
  search::Node bad = seed;
  bad.parent = seed_id;
  bad.round = 1;
  bad.idea = kLoserIdea;
  bad.verdict = "wrong_result";
  bad.candidate_us = 0;
  tree.add(bad);
  tree.close_round(1);
  writer.put_raw("trees", "search-a", tree.to_json().dump());
  writer.put_raw("jobs", full(bf16_shape(1024), kH100), R"({"state":"queued","count":3})");
}

Record row_test_record(const std::string& key_line, std::chrono::seconds age) {
  Record r = test_record(key_line, age);
  r.source = "// kdispatch:plan {\"launches\":[{\"entry\":\"kd_main\",\"grid\":[8,1,1],\"block\":[256,1,1],"
             "\"smem\":0}],\"workspace\":0}\n#include <kdispatch/rowop.cuh>\n"
             "extern \"C\" __global__ void kd_main(kd_row_args a) {}\n";
  r.validation_report = std::string(R"({"rule":"passed","baseline_name":")") + kTorchLayerNorm + "\"}";
  r.search_id = "search-row";
  r.cublas_version = 0;
  return r;
}

Record row_verdict_record(const std::string& key_line, std::chrono::seconds age) {
  Record r;
  r.key_line = key_line;
  r.kind = RecordKind::vendor;
  r.candidate_us = 30.0;
  r.baseline_us = 25.0;
  r.search_id = "search-softmax";
  r.proposer = "vendor";
  r.idea = "best correct candidate 30.0 us did not beat the baseline 25.0 us by the margin";
  r.search_version = 1;
  r.created_unix_s = unix_seconds_ago(age);
  return r;
}

void add_row_records(const std::filesystem::path& dir) {
  using std::chrono::hours;
  CacheWriter writer(dir);
  writer.commit_record(row_test_record(full(kLayernorm, kH100), hours(2)));
  writer.commit_record(row_verdict_record(full(kSoftmax, kH100), hours(5)));
  writer.commit_record(row_test_record(full(kRmsnorm, kH200), hours(1)));
}

std::vector<std::string> record_keys(const std::filesystem::path& dir) {
  const CacheWriter w(dir);
  std::vector<std::string> out;
  for (const auto& kv : w.scan_raw("records")) out.push_back(kv.first);
  return out;
}

}  // namespace kd::test
