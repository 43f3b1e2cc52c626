// kdctl show KEY: one record, its provenance and the search tree that found it.
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "baseline_label.hpp"
#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "kdctl.hpp"
#include "llm/prompts.hpp"
#include "table.hpp"
#include "tree/search_tree.hpp"

namespace kd::kdctl {
namespace {

constexpr const char* kTreesDb = "trees";

struct ShowArgs {
  std::string cache_dir;
  std::string key;
  std::string gpu;  // substring, to pick among records of one shape line
  bool source = false;
  bool json = false;
};

// Whether a record of `stored` answers `asked`: the same key, or (issue 29) a range that covers
// the exact n asked and equals it otherwise. Device parts are compared only when both have one.
bool answers(const GemmKey& stored, const GemmKey& asked) {
  GemmKey s = stored, a = asked;
  if (!a.device) s.device.reset();
  if (s == a) return true;
  return s.is_range() && !a.is_range() && s.covers(a.n) && s.at_n(a.n) == a;
}

// The records KEY names: the exact full line, or every record of a shape line on a GPU whose name
// contains `gpu_filter`; an exact KEY without a record of its own finds the range records that
// serve it.
std::vector<StoredRecord> find_records(const CacheSnapshot& cache, const GemmKey& key,
                                       const std::string& gpu_filter) {
  std::vector<StoredRecord> exact, covering;
  for (StoredRecord& s : cache.records()) {
    const auto parts = split_key(s.key_line);
    if (!parts || !answers(parts->key, key)) continue;
    if (!key.device && parts->key.device->gpu.find(gpu_filter) == std::string::npos) continue;
    (parts->key.n_hi == key.n_hi && parts->key.n == key.n ? exact : covering).push_back(std::move(s));
  }
  return exact.empty() ? covering : exact;
}

// The records a row operator's KEY (issue 33) names: the exact full line, or every record of its
// shape line on a GPU whose name contains `gpu_filter`. Row keys have no ranges.
std::vector<StoredRecord> find_row_records(const CacheSnapshot& cache, const RowKey& key,
                                           const std::string& gpu_filter) {
  std::vector<StoredRecord> out;
  for (StoredRecord& s : cache.records()) {
    const auto parts = split_op_key(s.key_line);
    const RowKey* stored = parts ? std::get_if<RowKey>(&parts->key) : nullptr;
    if (stored == nullptr) continue;
    if (key.device ? *stored != key
                   : stored->shape() != key.shape() || parts->device.gpu.find(gpu_filter) == std::string::npos)
      continue;
    out.push_back(std::move(s));
  }
  return out;
}

// "n=129..256; checked at n=129, 131, ...; timed at n=129 (12.1 us vs cuBLAS 14.0 us), ..." from a
// range record's validation report; empty for an exact record.
std::string range_summary(const nlohmann::json& report) {
  const auto it = report.find("range");
  if (!report.is_object() || it == report.end() || !it->is_object()) return {};
  const nlohmann::json& r = *it;
  std::string checked, timed;
  for (const auto& n : r.value("checked", nlohmann::json::array()))
    checked += fmt::format("{}{}", checked.empty() ? "" : ", ", n.dump());
  for (const auto& t : r.value("timed", nlohmann::json::array()))
    timed += fmt::format("{}{} ({:.2f} us vs cuBLAS {:.2f} us)", timed.empty() ? "" : ", ",
                         t.value("n", nlohmann::json()).dump(), t.value("candidate_us", 0.0), t.value("baseline_us", 0.0));
  return fmt::format("n={}..{}; checked at n={}; timed at n={}", r.value("lo", nlohmann::json()).dump(),
                     r.value("hi", nlohmann::json()).dump(), checked, timed);
}

std::variant<search::SearchTree, std::string> load_tree(const CacheSnapshot& cache,
                                                        const std::string& search_id) {
  if (search_id.empty()) return std::string("the record names no search");
  const auto text = cache.get_raw(kTreesDb, search_id);
  if (!text) return fmt::format("tree {} is not stored in this cache", search_id);
  try {
    return search::SearchTree::from_json(nlohmann::json::parse(*text));
  } catch (const nlohmann::json::exception& e) {
    return fmt::format("tree {} is unreadable: {}", search_id, e.what());
  }
}

nlohmann::json json_or_text(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(text) : j;
}

void print_record(const OpKey& key, const Record& r, std::uint64_t stored_bytes) {
  const auto line = [](std::string_view label, const std::string& value) {
    std::printf("%-12s%s\n", fmt::format("{}:", label).c_str(), value.c_str());
  };
  // What the kernel was timed against: cuBLAS, or for a row operator the framework's kernel the
  // verdict names (issue 33).
  const std::string baseline = baseline_of(key, r);
  line("key", r.key_line);
  line("kind", std::string(to_string(r.kind)));
  line("size", fmt::format("{} stored; cubin {}, ptx {}, source {}{}", format_bytes(stored_bytes),
                           format_bytes(r.cubin.size()), format_bytes(r.ptx.size()), format_bytes(r.source.size()),
                           is_row(key) ? "" : fmt::format(", cublaslt algo {}", format_bytes(r.cublaslt_algo.size()))));
  if (r.kind == RecordKind::nvrtc_kernel) line("plan", plan_to_json(r.plan));
  // Where a record's workspace comes from decides whether it runs inside CUDA graphs
  // (ARCHITECTURE.md): the caller's cuBLAS workspace when it is large enough, captured or not;
  // otherwise the record's own buffer, which a capture cannot use.
  if (r.kind == RecordKind::nvrtc_kernel && r.plan.workspace_bytes > 0) {
    constexpr std::uint64_t kTorchWorkspace = 32ull << 20;  // what PyTorch lends cuBLAS per handle
    line("workspace",
         fmt::format("{} per call; inside a CUDA graph it runs only where the caller lends cuBLAS that much{}, "
                     "else cuBLAS runs (KD_GRAPH_WORKSPACE=1 gives captures their own)",
                     format_bytes(r.plan.workspace_bytes),
                     r.plan.workspace_bytes > kTorchWorkspace ? " (PyTorch lends 32.0MiB: not enough)" : ""));
  }
  if (r.kind == RecordKind::cublaslt_algo)
    line("algorithm", fmt::format("{} (workspace {} bytes)", algo_hex(r.cublaslt_algo), r.plan.workspace_bytes));
  line("alignment", fmt::format("{} bytes", r.alignment_bytes));
  if (r.kind == RecordKind::vendor)
    line("verdict", fmt::format("{} kept: best correct candidate {}, {} {:.2f} us",
                                is_row(key) ? std::string(kFrameworkBaseline) : std::string(kVendorBaseline),
                                r.candidate_us > 0 ? fmt::format("{:.2f} us", r.candidate_us) : std::string("none"),
                                baseline, r.baseline_us));
  else
    line("times", fmt::format("kernel {:.2f} us, {} {:.2f} us, {} at SM clock {} MHz", r.candidate_us, baseline,
                              r.baseline_us, format_speedup(r.baseline_us, r.candidate_us), r.sm_clock_mhz));
  const std::string range = range_summary(json_or_text(r.validation_report));
  if (!range.empty()) line("range", range);
  line("validation", r.validation_report.empty() ? "-" : r.validation_report);
  line("search", r.search_id.empty() ? "-" : r.search_id);
  line("proposer", r.proposer);
  line("idea", r.idea);
  // A row operator's kernel depends on no cuBLAS.
  line("versions", fmt::format("record schema {}, NVRTC {}, driver {}{}", r.schema_version, r.nvrtc_version,
                               r.driver_version, is_row(key) ? "" : fmt::format(", cuBLAS {}", r.cublas_version)));
  line("created", fmt::format("{:%Y-%m-%d %H:%M:%S} UTC ({} ago)",
                              fmt::gmtime(static_cast<std::time_t>(r.created_unix_s)),
                              format_age(age_of(r.created_unix_s))));
}

void print_tree(const search::SearchTree& tree, const std::string& winner_hash, const OpKey& key) {
  std::printf("\nsearch tree %s: %zu node(s)\n", tree.search_id().c_str(), tree.nodes().size());
  Table rounds({{"ROUND", Align::right}, {"CANDIDATES", Align::right}, {"CORRECT", Align::right},
                {"BEST_US", Align::right}});
  for (const auto& r : tree.rounds()) {
    rounds.add({std::to_string(r.round), std::to_string(r.candidates), std::to_string(r.correct),
                r.best_us > 0 ? fmt::format("{:.2f}", r.best_us) : "-"});
  }
  std::fputs(rounds.render().c_str(), stdout);
  std::printf("\n");
  Table nodes({{"ID", Align::right}, {"PARENT", Align::right}, {"ROUND", Align::right}, {"FAMILY"},
               {"VERDICT"}, {"KERNEL_US", Align::right}, {"BASELINE_US", Align::right}, {"IDEA"}});
  for (const auto& n : tree.nodes()) {
    const bool winner = !winner_hash.empty() && n.source_hash == winner_hash;
    nodes.add({fmt::format("{}{}", winner ? "*" : "", n.id), n.parent < 0 ? "-" : std::to_string(n.parent),
               std::to_string(n.round), n.family.empty() ? n.proposer : n.family, n.verdict,
               n.candidate_us > 0 ? fmt::format("{:.2f}", n.candidate_us) : "-",
               n.baseline_us > 0 ? fmt::format("{:.2f}", n.baseline_us) : "-", n.idea});
  }
  std::fputs(nodes.render().c_str(), stdout);
  if (!winner_hash.empty())
    std::printf("(* = the stored kernel%s; BASELINE_US: %s)\n", is_row(key) ? "" : " or cuBLASLt algorithm",
                std::string(baseline_of(key)).c_str());
}

nlohmann::json record_json(const OpKey& key, const Record& r, std::uint64_t stored_bytes, bool with_source) {
  nlohmann::json j = {
      {"key", r.key_line}, {"kind", to_string(r.kind)}, {"stored_bytes", stored_bytes},
      {"cubin_bytes", r.cubin.size()}, {"ptx_bytes", r.ptx.size()}, {"source_bytes", r.source.size()},
      {"cublaslt_algo_bytes", r.cublaslt_algo.size()}, {"alignment_bytes", r.alignment_bytes},
      {"candidate_us", r.candidate_us}, {"baseline_us", r.baseline_us}, {"sm_clock_mhz", r.sm_clock_mhz},
      {"validation", json_or_text(r.validation_report)}, {"search_id", r.search_id},
      {"proposer", r.proposer}, {"idea", r.idea}, {"schema_version", r.schema_version},
      {"nvrtc_version", r.nvrtc_version}, {"driver_version", r.driver_version},
      {"cublas_version", r.cublas_version}, {"created_unix_s", r.created_unix_s}};
  if (r.kind == RecordKind::nvrtc_kernel) j["plan"] = nlohmann::json::parse(plan_to_json(r.plan));
  j["baseline"] = baseline_of(key, r);  // what baseline_us is of: cuBLAS, or a row operator's framework kernel
  if (with_source) j["source"] = r.source;
  return j;
}

// The LLM proposer's versioned prompts, as they are compiled in (search/prompts/).
int show_prompts() {
  for (const llm::PromptFile& p : llm::prompt_files())
    std::printf("=== %s (search/prompts/%s)\n%s\n", std::string(p.name).c_str(), std::string(p.file_name).c_str(),
                std::string(p.text).c_str());
  return kOk;
}

int run_show(const ShowArgs& a) {
  if (a.key == "prompts") return show_prompts();
  auto parsed = parse_op_key(a.key);
  if (const auto* bad = std::get_if<KeyError>(&parsed)) {
    std::fprintf(stderr, "kdctl show: bad KEY: %s\n", bad->message.c_str());
    return kUsage;
  }
  const OpKey& op = std::get<OpKey>(parsed);
  const CacheSnapshot cache(resolve_cache_dir(a.cache_dir));
  const auto* row = std::get_if<RowKey>(&op);
  // A row key stands in the checks below as an exact key with no n: a GemmKey of its own never
  // takes the range branch.
  const GemmKey key = row ? GemmKey{} : std::get<GemmKey>(op);
  const bool keyed = row ? row->device.has_value() : key.device.has_value();
  const auto found = row ? find_row_records(cache, *row, a.gpu) : find_records(cache, key, a.gpu);
  if (found.size() > 1) {
    std::fprintf(stderr, "kdctl show: %zu records match this shape line; pick one with --gpu or a full key:\n",
                 found.size());
    for (const auto& s : found) std::fprintf(stderr, "  %s\n", s.key_line.c_str());
    return kUsage;
  }
  if (found.empty()) {
    std::fprintf(stderr, "kdctl show: no record for %s%s in %s\n",
                 (keyed ? op_full_line(op) : op_shape_line(op)).c_str(),
                 a.gpu.empty() ? "" : fmt::format(" on a GPU matching \"{}\"", a.gpu).c_str(),
                 cache.dir().c_str());
    return kFailure;
  }
  const StoredRecord* stored = &found.front();
  const bool by_range = !row && !key.is_range() && stored->key_line.find("..") != std::string::npos;
  if (by_range && !a.json) std::printf("(no record of its own: the range record below serves n=%lld)\n",
                                       static_cast<long long>(key.n));
  if (const auto* error = std::get_if<RecordError>(&stored->record)) {
    std::fprintf(stderr, "kdctl show: the record for %s is damaged: %s\n", stored->key_line.c_str(),
                 std::string(to_string(*error)).c_str());
    return kFailure;
  }
  const Record& r = std::get<Record>(stored->record);
  const auto tree = load_tree(cache, r.search_id);
  const std::string winner_hash =
      r.kind == RecordKind::cublaslt_algo
          ? search::algo_hash({r.cublaslt_algo, r.plan.workspace_bytes, r.cublas_version})
          : (r.source.empty() ? "" : search::source_hash(r.source));
  if (a.json) {
    nlohmann::json j = record_json(op, r, stored->stored_bytes, a.source);
    if (const auto* t = std::get_if<search::SearchTree>(&tree)) {
      nlohmann::json tj = t->to_json();
      if (!a.source) {
        for (auto& n : tj["nodes"]) n.erase("source");
      }
      j["tree"] = std::move(tj);
    } else {
      j["tree_unavailable"] = std::get<std::string>(tree);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  print_record(op, r, stored->stored_bytes);
  if (const auto* t = std::get_if<search::SearchTree>(&tree)) {
    print_tree(*t, winner_hash, op);
  } else {
    std::printf("\nsearch tree: %s\n", std::get<std::string>(tree).c_str());
  }
  if (a.source) std::printf("\n--- source ---\n%s\n", r.source.c_str());
  return kOk;
}

}  // namespace

void setup_show(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_show);
  sub.add_option("key", a->key,
                 "A full key line, a shape line (a GEMM's or a row operator's: rmsnorm, layernorm, softmax; with "
                 "--gpu when several GPUs have it), or `prompts` for "
                 "the llm proposer's prompt files; an exact n without a record of its own shows the range "
                 "record serving it, with the n it was checked and timed at")
      ->required();
  sub.add_option("--cache-dir", a->cache_dir, "Cache directory (default: KD_CACHE_DIR, else ~/.cache/kdispatch)");
  sub.add_option("--gpu", a->gpu, "With a shape line: the GPU whose name contains this text");
  sub.add_flag("--source", a->source, "Print the kernel's CUDA source");
  sub.add_flag("--json", a->json, "Print JSON");
  sub.footer("Exit codes: 0 ok, 1 no cache, no such record or a damaged one, 2 usage (bad key, ambiguous shape).\n");
}

}  // namespace kd::kdctl
