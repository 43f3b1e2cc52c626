// kdctl search: one branching search in the foreground, with live progress and the tree printed; a
// range key (n=LO..HI, issue 29) runs the range search and its gate, as kdispatchd does.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "baseline_label.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "config/config.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "daemon_link.hpp"
#include "driver/gpu_target.hpp"
#include "driver/proposer_table.hpp"
#include "driver/search_driver.hpp"
#include "driver/winner_record.hpp"
#include "driver/worker_backend.hpp"
#include "kdctl.hpp"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "range/range_search.hpp"
#include "range_gate_print.hpp"
#include "store/cache_store.hpp"
#include "worker/worker_parent.hpp"

namespace kd::kdctl {
namespace {

// The kdispatchd configuration keys kdctl search shares, each with kdctl's flag for it: their
// values come from the flag, else the key's KD_* variable, else kdispatchd's configuration file,
// else the table's default (config/config.hpp), exactly as the daemon resolves them.
struct SharedKey {
  std::string_view key;
  std::string_view flag;
};
constexpr SharedKey kSharedKeys[] = {
    {"llm_api", "--llm-api"},         {"llm_url", "--llm-url"},           {"llm_model", "--llm-model"},
    {"llm_key_env", "--llm-key-env"}, {"llm_key_file", "--llm-key-file"}, {"budget_llm_tokens", "--llm-tokens"},
};

struct SearchArgs {
  std::string key;
  std::string proposers = "builtin";
  std::string families;  // --family: the builtin families to seed, comma-separated (empty: all, by their rules)
  int rounds = 3, ideas = 3, impls = 2, topk = 2, max_candidates = 64, wall_s = 900;
  bool dry_run = false;
  std::string cache_dir;  // empty: print only
  std::string socket;     // the daemon told of a published winner (empty: the default socket)
  int device = 0;
  int watchdog_s = 60;
  std::map<std::string, std::string, std::less<>> shared;  // config key -> its flag's value, when given
};

// The proposers named by --proposer, in order; an unknown or misconfigured one is a usage error.
std::variant<std::vector<std::unique_ptr<search::Proposer>>, std::string> make_proposers(const SearchArgs& a) {
  auto names = search::parse_proposer_list(a.proposers);
  if (auto* err = std::get_if<std::string>(&names)) return "--proposer: " + *err;
  daemon::CommandLine line;
  line.flags.insert(a.shared.begin(), a.shared.end());
  std::vector<std::string_view> keys;
  for (const SharedKey& k : kSharedKeys) keys.push_back(k.key);
  daemon::Config config;
  try {
    config = daemon::load_shared_config(keys, line, daemon::process_environment);
  } catch (const Error& e) {
    return std::string(e.what());
  }
  const auto& list = std::get<std::vector<search::ProposerName>>(names);
  search::ProposerSettings settings = daemon::proposer_settings(config);
  auto families = search::parse_family_list(a.families);
  if (auto* err = std::get_if<std::string>(&families)) return "--family: " + *err;
  settings.builtin_families = std::move(std::get<std::vector<std::string>>(families));
  if (!settings.builtin_families.empty() &&
      std::find(list.begin(), list.end(), search::ProposerName::builtin) == list.end())
    return std::string("--family picks the builtin proposer's families: add builtin to --proposer");
  return search::make_proposers(list, settings);
}

std::string fmt_us(double us) { return us > 0 ? fmt::format("{:.1f}", us) : "-"; }

// `baseline`: what the node was timed against (baseline_label.hpp).
void print_node(const search::Node& n, std::string_view baseline) {
  std::string time = n.correct() ? fmt::format("{} us vs {} {} us (x{:.2f})", fmt_us(n.candidate_us), baseline,
                                               fmt_us(n.baseline_us),
                                               n.candidate_us > 0 ? n.baseline_us / n.candidate_us : 0.0)
                                 : n.detail.substr(0, 80);
  std::printf("  r%d #%-3d %-11s %-14s %s\n      idea: %s\n", n.round, n.id, (n.family.empty() ? n.proposer : n.family).c_str(),
              n.verdict.c_str(), time.c_str(), n.idea.c_str());
  std::fflush(stdout);
}

void print_rounds(const search::SearchOutcome& out) {
  std::printf("\nround  candidates  correct  best_us\n");
  for (const search::RoundSummary& r : out.tree.rounds())
    std::printf("%5d  %10d  %7d  %7s\n", r.round, r.candidates, r.correct, fmt_us(r.best_us).c_str());
  std::printf("stopped: %s (%zu candidates, %.1f s)\n", out.stop_reason.c_str(), out.tree.nodes().size(),
              out.elapsed.count() / 1000.0);
}

// The winner, or what was kept: cuBLAS for a GEMM, the framework's kernel for a row operator,
// named as the verdict names it (issue 33: "torch 2.11.0+cu130 F.layer_norm").
void print_summary(const search::SearchOutcome& out, const OpKey& key) {
  print_rounds(out);
  const auto roof = [&](double us) {
    return out.floor_us > 0 && us > 0 ? fmt::format(", {:.0f}% of the roofline floor {:.1f} us", 100 * out.floor_us / us, out.floor_us)
                                      : std::string();
  };
  const auto baseline = [&](int id) {
    const auto v = out.verdicts.find(static_cast<std::size_t>(id));
    return v == out.verdicts.end() ? std::string(baseline_of(key)) : baseline_of(key, v->second);
  };
  const std::string kept(baseline_of(key));
  if (out.winner) {
    const search::Node& w = out.tree.node(*out.winner);
    std::printf("winner: #%d %s %s: %.1f us vs %s %.1f us, x%.2f%s\n", w.id,
                (w.family.empty() ? w.proposer : w.family).c_str(), w.params.c_str(), w.candidate_us,
                baseline(w.id).c_str(), w.baseline_us, w.baseline_us / w.candidate_us, roof(w.candidate_us).c_str());
  } else if (auto best = out.tree.best()) {
    const search::Node& b = out.tree.node(*best);
    std::printf("kept %s: best correct candidate #%d %.1f us vs %s %.1f us (not faster by the margin)%s\n",
                kept.c_str(), b.id, b.candidate_us, baseline(b.id).c_str(), b.baseline_us, roof(b.baseline_us).c_str());
  } else {
    std::printf("kept %s: no correct candidate\n", kept.c_str());
  }
}

// A range key's search (issue 29): the branching search at n = HI over the configurations that
// serve every n, then the range gate; the summary names the range's winner, or why there is none.
void print_range_summary(const GemmKey& key, const search::range::RangeOutcome& out, search::SearchMode mode) {
  print_rounds(out.search);
  if (mode == search::SearchMode::dry_run) {
    std::printf("dry run: %zu candidates that serve every n of %lld..%lld compiled; the range gate did not run\n",
                out.search.tree.nodes().size(), static_cast<long long>(key.n), static_cast<long long>(key.n_hi));
    return;
  }
  if (!out.results.empty())
    std::printf("range gate (%zu points checked, timed at n=%s):\n", out.points.checked.size(),
                n_list(out.points.timed).c_str());
  print_range_points(out.results);
  if (out.winner) {
    const search::Node& w = out.search.tree.node(*out.winner);
    std::printf("range winner: #%d %s %s serves n=%lld..%lld: correct at every checked n, faster than cuBLAS at "
                "n=%s\n",
                w.id, w.family.c_str(), w.params.c_str(), static_cast<long long>(key.n),
                static_cast<long long>(key.n_hi), n_list(out.points.timed).c_str());
  } else {
    std::printf("kept cuBLAS for n=%lld..%lld: %s\n", static_cast<long long>(key.n), static_cast<long long>(key.n_hi),
                out.reason.c_str());
  }
}

int run_search_command(const SearchArgs& a) {
  // Any operator's key (issue 33): a row operator's searches exact, with the proposers that serve
  // row operators (builtin's row_reduce, llm's row prompts), against the gate's row baseline.
  auto parsed = parse_op_key(a.key);
  if (auto* err = std::get_if<KeyError>(&parsed)) {
    std::fprintf(stderr, "kdctl search: bad --key: %s\n", err->message.c_str());
    return kUsage;
  }
  OpKey op = std::get<OpKey>(parsed);
  auto made = make_proposers(a);
  if (auto* err = std::get_if<std::string>(&made)) {
    std::fprintf(stderr, "kdctl search: %s\n", err->c_str());
    return kUsage;
  }
  const auto owned = std::move(std::get<0>(made));

  search::GpuTarget target;  // sm_90 / 132 SMs unless a GPU says otherwise
  const bool have_gpu = cu_device_count() > a.device;
  if (have_gpu) {
    const DeviceInfo dev = query_device(a.device);
    target = search::GpuTarget::from(dev);
    op = std::visit([&](const auto& k) { return OpKey(k.device ? k : k.with_device({dev.arch, dev.name, dev.sms})); },
                    op);
  } else if (!a.dry_run) {
    std::fprintf(stderr, "kdctl search: no usable GPU (%s); --dry-run proposes and compiles without one\n",
                 cu_unavailable_reason().empty() ? "no device" : cu_unavailable_reason().c_str());
    return kNoGpu;
  }

  search::SearchOptions opts;
  opts.mode = a.dry_run ? search::SearchMode::dry_run : search::SearchMode::evaluate;
  opts.budget.rounds = a.rounds;
  opts.budget.ideas = a.ideas;
  opts.budget.impls = a.impls;
  opts.budget.topk = a.topk;
  opts.budget.max_candidates = a.max_candidates;
  opts.budget.wall = std::chrono::seconds(a.wall_s);

  std::vector<search::Proposer*> proposers;
  for (const auto& p : owned) proposers.push_back(p.get());
  search::CompileService compiler;
  std::unique_ptr<search::WorkerBackend> backend;
  if (!a.dry_run) {
    const std::filesystem::path roofline_dir = a.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a.cache_dir);
    std::filesystem::create_directories(roofline_dir);
    backend = std::make_unique<search::WorkerBackend>(worker::default_worker_spawn(a.device, roofline_dir),
                                                      std::chrono::seconds(a.watchdog_s));
    std::printf("starting the evaluation worker (first start measures the roofline)...\n");
    backend->start();
  }

  const GemmKey* gemm = std::get_if<GemmKey>(&op);
  const std::optional<DevicePart>& device = gemm ? gemm->device : std::get<RowKey>(op).device;
  std::printf("search %s\n  on %s (%s, %d SMs)%s\n", op_shape_line(op).c_str(),
              device ? device->gpu.c_str() : "no GPU", target.arch.c_str(), target.sms,
              a.dry_run ? ", dry run: compile only" : "");
  const bool with_cublaslt = std::any_of(owned.begin(), owned.end(), [](const auto& p) { return p->name() == "cublaslt"; });
  if (a.dry_run && with_cublaslt)
    std::printf("  note: cublaslt enumeration needs a GPU (the evaluation worker); a dry run proposes no cuBLASLt "
                "algorithm\n");
  const search::SearchObserver observer = [&op](const search::SearchEvent& e) {
    if (e.kind == search::SearchEvent::Kind::round_started)
      std::printf("round %d: %s\n", e.round, e.message.c_str());
    else if (e.kind == search::SearchEvent::Kind::candidate_done && e.node)
      print_node(*e.node, baseline_of(op));
    std::fflush(stdout);
  };
  // A range key (issue 29) runs the range search, as kdispatchd's search runner does for a range job.
  std::optional<search::range::RangeOutcome> ranged;
  search::SearchOutcome plain;
  if (gemm && gemm->is_range()) {
    const GemmKey& key = *gemm;
    std::printf("  a range of n: searched at n=%lld over the configurations that serve every n of it, then checked "
                "at up to %zu points and timed at its ends and middle\n",
                static_cast<long long>(key.n_hi), search::range::kMaxChecked);
    ranged = search::range::run_range_search(key, target, proposers, compiler, backend.get(), opts, observer);
    print_range_summary(key, *ranged, opts.mode);
  } else {
    plain = run_search(op, target, proposers, compiler, backend.get(), opts, observer);
    print_summary(plain, op);
  }
  const search::SearchOutcome& out = ranged ? ranged->search : plain;
  const bool won = ranged ? ranged->winner.has_value() : out.winner.has_value();

  if (!a.cache_dir.empty() && !a.dry_run) {
    std::vector<std::string> published;
    {
      CacheWriter writer(a.cache_dir);
      writer.put_raw("trees", out.tree.search_id(), out.tree.to_json().dump());
      if (won) {
        const search::RecordVersions versions{search::nvrtc_version(), cu().driver_version, 0};
        const std::string full_line = op_full_line(op);
        const Record record = ranged ? search::range::make_range_record(*ranged, full_line, versions)
                                     : search::make_record(out, *out.winner, full_line, versions);
        const std::uint64_t gen = writer.commit_record(record);
        published.push_back(full_line);
        std::printf("published to %s (generation %llu)\n", a.cache_dir.c_str(), static_cast<unsigned long long>(gen));
      }
    }
    std::printf("tree stored as %s\n", out.tree.search_id().c_str());
    if (!published.empty())
      print_daemon_notice("kdctl search",
                          tell_daemon_cache_changed(socket_of(DaemonArgs{a.socket, a.cache_dir}), a.cache_dir, published));
  }
  if (a.dry_run) return kOk;
  return won ? kOk : kNotFaster;
}

}  // namespace

void setup_search(CLI::App& sub, std::function<int()>& action) {
  auto a = std::make_shared<SearchArgs>();
  sub.add_option("--key", a->key,
                 "Canonical key line (gemm, or rmsnorm/layernorm/softmax rows= cols=) or `linear dtype= tokens= in= out=` "
                 "shorthand; a GEMM's n (tokens) may be a range LO..HI")
      ->required();
  sub.add_option("--proposer", a->proposers, "Proposers, comma-separated: builtin, llm, cublaslt")->capture_default_str();
  sub.add_option("--family", a->families,
                 "Seed only these builtin families (comma-separated, e.g. wg_tma_f16s), on every key they do not "
                 "reject, their cost-based declines set aside: to measure a family the rules pass over");
  for (const daemon::ConfigKeyInfo& k : daemon::config_keys()) {
    const auto shared = std::find_if(std::begin(kSharedKeys), std::end(kSharedKeys),
                                     [&](const SharedKey& s) { return s.key == k.name; });
    if (shared == std::end(kSharedKeys)) continue;
    sub.add_option(std::string(shared->flag), a->shared[std::string(k.name)],
                   fmt::format("{} (default: env {}, else kdispatchd's config key {}, else '{}')", k.description,
                               k.env, k.name, k.default_text));
  }
  sub.add_option("--rounds", a->rounds, "Rounds after round 0")->capture_default_str()->check(CLI::Range(0, 50));
  sub.add_option("--ideas", a->ideas, "Ideas per seed per proposer")->capture_default_str()->check(CLI::Range(1, 32));
  sub.add_option("--impls", a->impls, "Implementations per idea")->capture_default_str()->check(CLI::Range(1, 16));
  sub.add_option("--topk", a->topk, "Seeds carried into the next round")->capture_default_str()->check(CLI::Range(1, 16));
  sub.add_option("--max-candidates", a->max_candidates, "Candidate budget")->capture_default_str()->check(CLI::Range(1, 10000));
  sub.add_option("--wall-seconds", a->wall_s, "Wall-time budget")->capture_default_str()->check(CLI::Range(1, 86400));
  sub.add_option("--watchdog-seconds", a->watchdog_s, "Kill a candidate's worker after this long")->capture_default_str();
  sub.add_option("--device", a->device, "CUDA device ordinal")->capture_default_str();
  sub.add_option("--cache-dir", a->cache_dir, "Store the tree and publish the winner into this cache (default: print only)");
  add_socket_flag(sub, a->socket);
  sub.add_flag("--dry-run", a->dry_run, "Propose and compile only; needs no GPU");
  sub.footer(
      "A range key (n=LO..HI) is searched as kdispatchd searches a range job: the branching search at n=HI over the "
      "builtin configurations that serve every n of it, then the range gate at up to 16 n (the ends, ragged values, "
      "tile boundaries), timed against cuBLAS at the ends and the middle; the record it publishes serves every n.\n"
      "A row operator's key (rmsnorm, layernorm, softmax; exact, no ranges) is searched by the proposers that serve "
      "row operators (builtin's row_reduce, llm's row prompts; cublaslt is left out) against the framework's kernel "
      "(PyTorch's, timed by the worker with python3; the evaluator's f32 stand-in without torch), which the summary "
      "names.\n"
      "Exit codes: 0 a winner (or a dry run), 3 the baseline kept (cuBLAS, or a row operator's framework kernel: "
      "nothing faster by the margin, or for a range at one of its timed n), 2 usage error, 4 no GPU.");
  sub.callback([a, &action, &sub] {
    // Only the flags given override the environment and the configuration file.
    for (const SharedKey& k : kSharedKeys)
      if (sub.get_option(std::string(k.flag))->count() == 0) a->shared.erase(std::string(k.key));
    action = [a] { return run_search_command(*a); };
  });
}

}  // namespace kd::kdctl
