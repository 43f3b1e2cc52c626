// kdctl search: one branching search in the foreground, with live progress and the tree printed.
#include <algorithm>
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "builtin/builtin_proposer.hpp"
#include "commands.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "cublaslt_proposer/cublaslt_proposer.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "driver/proposer_list.hpp"
#include "driver/publish.hpp"
#include "driver/search_driver.hpp"
#include "driver/worker_backend.hpp"
#include "kdctl.hpp"
#include "key/gemm_key.hpp"
#include "llm/search_adapter.hpp"
#include "store/cache_store.hpp"
#include "worker/worker_client.hpp"

namespace kd::kdctl {
namespace {

struct SearchArgs {
  std::string key;
  std::string proposers = "builtin";
  int rounds = 3, ideas = 3, impls = 2, topk = 2, max_candidates = 64, wall_s = 900;
  bool dry_run = false;
  std::string cache_dir;  // empty: print only
  int device = 0;
  int watchdog_s = 60;
  // --proposer llm
  std::string llm_api = "openai";
  std::string llm_url = "http://127.0.0.1:8000";
  std::string llm_model;
  std::string llm_key_env;
  std::string llm_key_file;
  long long llm_tokens = 200000;
};

// The proposers named by --proposer, in order; an unknown or misconfigured one is a usage error.
std::variant<std::vector<std::unique_ptr<search::Proposer>>, std::string> make_proposers(const SearchArgs& a) {
  auto names = search::parse_proposer_list(a.proposers);
  if (auto* err = std::get_if<std::string>(&names)) return "--proposer: " + *err;
  std::vector<std::unique_ptr<search::Proposer>> out;
  for (const search::ProposerName name : std::get<std::vector<search::ProposerName>>(names)) {
    if (name == search::ProposerName::builtin) {
      out.push_back(std::make_unique<builtin::BuiltinProposer>());
    } else if (name == search::ProposerName::cublaslt) {
      out.push_back(std::make_unique<cublaslt::CublasLtProposer>());
    } else if (name == search::ProposerName::llm) {
      llm::LlmConfig c;
      const auto api = llm::api_kind_from_string(a.llm_api);
      if (!api) return "unknown --llm-api '" + a.llm_api + "' (openai or anthropic)";
      if (a.llm_model.empty()) return "--proposer llm needs --llm-model";
      c.api = *api;
      c.base_url = a.llm_url;
      c.model = a.llm_model;
      if (!a.llm_key_file.empty()) c.key = llm::KeyFromFile{a.llm_key_file};
      else if (!a.llm_key_env.empty()) c.key = llm::KeyFromEnv{a.llm_key_env};
      out.push_back(std::make_unique<llm::LlmSearchProposer>(c, std::make_shared<llm::TokenBudget>(a.llm_tokens)));
    }
  }
  return out;
}

std::string fmt_us(double us) { return us > 0 ? fmt::format("{:.1f}", us) : "-"; }

void print_node(const search::Node& n) {
  std::string time = n.correct() ? fmt::format("{} us vs cuBLAS {} us (x{:.2f})", fmt_us(n.candidate_us),
                                               fmt_us(n.baseline_us),
                                               n.candidate_us > 0 ? n.baseline_us / n.candidate_us : 0.0)
                                 : n.detail.substr(0, 80);
  std::printf("  r%d #%-3d %-11s %-14s %s\n      idea: %s\n", n.round, n.id, (n.family.empty() ? n.proposer : n.family).c_str(),
              n.verdict.c_str(), time.c_str(), n.idea.c_str());
  std::fflush(stdout);
}

void print_summary(const search::SearchOutcome& out) {
  std::printf("\nround  candidates  correct  best_us\n");
  for (const search::RoundSummary& r : out.tree.rounds())
    std::printf("%5d  %10d  %7d  %7s\n", r.round, r.candidates, r.correct, fmt_us(r.best_us).c_str());
  std::printf("stopped: %s (%zu candidates, %.1f s)\n", out.stop_reason.c_str(), out.tree.nodes().size(),
              out.elapsed.count() / 1000.0);
  const auto roof = [&](double us) {
    return out.floor_us > 0 && us > 0 ? fmt::format(", {:.0f}% of the roofline floor {:.1f} us", 100 * out.floor_us / us, out.floor_us)
                                      : std::string();
  };
  if (out.winner) {
    const search::Node& w = out.tree.node(*out.winner);
    std::printf("winner: #%d %s %s: %.1f us vs cuBLAS %.1f us, x%.2f%s\n", w.id,
                (w.family.empty() ? w.proposer : w.family).c_str(), w.params.c_str(), w.candidate_us, w.baseline_us, w.baseline_us / w.candidate_us,
                roof(w.candidate_us).c_str());
  } else if (auto best = out.tree.best()) {
    const search::Node& b = out.tree.node(*best);
    std::printf("kept cuBLAS: best correct candidate #%d %.1f us vs cuBLAS %.1f us (not faster by the margin)%s\n",
                b.id, b.candidate_us, b.baseline_us, roof(b.baseline_us).c_str());
  } else {
    std::printf("kept cuBLAS: no correct candidate\n");
  }
}

int run_search_command(const SearchArgs& a) {
  auto parsed = parse_key(a.key);
  if (auto* err = std::get_if<KeyError>(&parsed)) {
    std::fprintf(stderr, "kdctl search: bad --key: %s\n", err->message.c_str());
    return kUsage;
  }
  GemmKey key = std::get<GemmKey>(parsed);
  auto made = make_proposers(a);
  if (auto* err = std::get_if<std::string>(&made)) {
    std::fprintf(stderr, "kdctl search: %s\n", err->c_str());
    return kUsage;
  }
  const auto owned = std::move(std::get<0>(made));

  builtin::Target target;  // sm_90 / 132 SMs unless a GPU says otherwise
  const bool have_gpu = cu_device_count() > a.device;
  if (have_gpu) {
    const DeviceInfo dev = query_device(a.device);
    target = builtin::Target::from(dev);
    if (!key.device) key = key.with_device({dev.arch, dev.name, dev.sms});
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

  std::printf("search %s\n  on %s (%s, %d SMs)%s\n", key.shape_line().c_str(),
              key.device ? key.device->gpu.c_str() : "no GPU", target.arch.c_str(), target.sms,
              a.dry_run ? ", dry run: compile only" : "");
  const bool with_cublaslt = std::any_of(owned.begin(), owned.end(), [](const auto& p) { return p->name() == "cublaslt"; });
  if (a.dry_run && with_cublaslt)
    std::printf("  note: cublaslt enumeration needs a GPU (the evaluation worker); a dry run proposes no cuBLASLt "
                "algorithm\n");
  const search::SearchObserver observer = [](const search::SearchEvent& e) {
    if (e.kind == search::SearchEvent::Kind::round_started)
      std::printf("round %d: %s\n", e.round, e.message.c_str());
    else if (e.kind == search::SearchEvent::Kind::candidate_done && e.node)
      print_node(*e.node);
    std::fflush(stdout);
  };
  const search::SearchOutcome out = run_search(key, target, proposers, compiler, backend.get(), opts, observer);
  print_summary(out);

  if (!a.cache_dir.empty() && !a.dry_run) {
    CacheWriter writer(a.cache_dir);
    writer.put_raw("trees", out.tree.search_id(), out.tree.to_json().dump());
    if (out.winner) {
      const search::RecordVersions versions{search::nvrtc_version(), cu().driver_version, 0};
      const std::uint64_t gen = writer.publish(search::make_record(out, *out.winner, key.full_line(), versions));
      std::printf("published to %s (generation %llu)\n", a.cache_dir.c_str(), static_cast<unsigned long long>(gen));
    }
    std::printf("tree stored as %s\n", out.tree.search_id().c_str());
  }
  if (a.dry_run) return kOk;
  return out.winner ? kOk : kNotFaster;
}

}  // namespace

void setup_search(CLI::App& sub, std::function<int()>& action) {
  auto a = std::make_shared<SearchArgs>();
  sub.add_option("--key", a->key, "Canonical key line or `linear dtype= tokens= in= out=` shorthand")->required();
  sub.add_option("--proposer", a->proposers, "Proposers, comma-separated: builtin, llm, cublaslt")->capture_default_str();
  sub.add_option("--llm-api", a->llm_api, "LLM wire API: openai (chat completions; vLLM, llama.cpp, Ollama, SGLang) or anthropic")->capture_default_str();
  sub.add_option("--llm-url", a->llm_url, "LLM base URL, without /v1/...")->capture_default_str();
  sub.add_option("--llm-model", a->llm_model, "LLM model name");
  sub.add_option("--llm-key-env", a->llm_key_env, "Environment variable holding the API key");
  sub.add_option("--llm-key-file", a->llm_key_file, "File holding the API key (mode 0600 or 0400, owned by you)");
  sub.add_option("--llm-tokens", a->llm_tokens, "LLM token budget for this search")->capture_default_str();
  sub.add_option("--rounds", a->rounds, "Rounds after round 0")->capture_default_str()->check(CLI::Range(0, 50));
  sub.add_option("--ideas", a->ideas, "Ideas per seed per proposer")->capture_default_str()->check(CLI::Range(1, 32));
  sub.add_option("--impls", a->impls, "Implementations per idea")->capture_default_str()->check(CLI::Range(1, 16));
  sub.add_option("--topk", a->topk, "Seeds carried into the next round")->capture_default_str()->check(CLI::Range(1, 16));
  sub.add_option("--max-candidates", a->max_candidates, "Candidate budget")->capture_default_str()->check(CLI::Range(1, 10000));
  sub.add_option("--wall-seconds", a->wall_s, "Wall-time budget")->capture_default_str()->check(CLI::Range(1, 86400));
  sub.add_option("--watchdog-seconds", a->watchdog_s, "Kill a candidate's worker after this long")->capture_default_str();
  sub.add_option("--device", a->device, "CUDA device ordinal")->capture_default_str();
  sub.add_option("--cache-dir", a->cache_dir, "Store the tree and publish the winner into this cache (default: print only)");
  sub.add_flag("--dry-run", a->dry_run, "Propose and compile only; needs no GPU");
  sub.callback([a, &action] { action = [a] { return run_search_command(*a); }; });
}

}  // namespace kd::kdctl
