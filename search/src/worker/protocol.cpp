#include "worker/protocol.hpp"

#include <variant>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::worker {
namespace {

[[noreturn]] void malformed(const std::string& what) {
  throw Error(ErrorDomain::data, 0, "worker protocol: " + what);
}

}  // namespace

nlohmann::json to_json(const eval::EvalOptions& o) {
  return {{"trials", o.trials},
          {"error_factor", o.error_factor},
          {"timing", o.timing == eval::Timing::measure ? "measure" : "skip"},
          {"warmup_runs", o.warmup_runs},
          {"min_timed_runs", o.min_timed_runs},
          {"max_timed_runs", o.max_timed_runs},
          {"timing_budget_ms", o.timing_budget.count()},
          {"serving_min_replays", o.serving_min_replays},
          {"serving_max_replays", o.serving_max_replays},
          {"serving_budget_ms", o.serving_budget.count()},
          {"win_margin", o.win_margin},
          {"seed", o.seed}};
}

eval::EvalOptions options_from_json(const nlohmann::json& j) {
  eval::EvalOptions o;
  try {
    o.trials = j.value("trials", o.trials);
    o.error_factor = j.value("error_factor", o.error_factor);
    const std::string timing = j.value("timing", std::string("measure"));
    if (timing != "measure" && timing != "skip") malformed("options.timing: '" + timing + "'");
    o.timing = timing == "skip" ? eval::Timing::skip : eval::Timing::measure;
    o.warmup_runs = j.value("warmup_runs", o.warmup_runs);
    o.min_timed_runs = j.value("min_timed_runs", o.min_timed_runs);
    o.max_timed_runs = j.value("max_timed_runs", o.max_timed_runs);
    o.timing_budget = std::chrono::milliseconds(j.value("timing_budget_ms", o.timing_budget.count()));
    o.serving_min_replays = j.value("serving_min_replays", o.serving_min_replays);
    o.serving_max_replays = j.value("serving_max_replays", o.serving_max_replays);
    o.serving_budget = std::chrono::milliseconds(j.value("serving_budget_ms", o.serving_budget.count()));
    o.win_margin = j.value("win_margin", o.win_margin);
    o.seed = j.value("seed", o.seed);
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("options: ") + e.what());
  }
  return o;
}

Frame evaluate_frame(std::uint64_t id, const eval::EvalRequest& request) {
  Frame f;
  f.header = {{"type", "evaluate"}, {"id", id}, {"key", request.key_line}, {"options", to_json(request.options)}};
  if (request.cublaslt) {
    f.header["cublaslt"] = {{"workspace_bytes", request.cublaslt->workspace_bytes},
                            {"version", request.cublaslt->version}};
    f.blob = request.cublaslt->bytes;
  } else {
    f.header["plan"] = nlohmann::json::parse(plan_to_json(request.plan));
    f.blob = request.cubin;
  }
  return f;
}

eval::EvalRequest request_from_frame(const Frame& frame) {
  if (frame_type(frame) != "evaluate") malformed("expected an evaluate frame");
  eval::EvalRequest r;
  try {
    r.key_line = frame.header.at("key").get<std::string>();
    if (const auto lt = frame.header.find("cublaslt"); lt != frame.header.end()) {
      if (frame.blob.size() != kCublasLtAlgoBytes)
        malformed(fmt::format("evaluate: a cuBLASLt algorithm is {} bytes, the blob has {}", kCublasLtAlgoBytes,
                              frame.blob.size()));
      r.cublaslt = CublasLtAlgo{frame.blob, lt->at("workspace_bytes").get<std::uint64_t>(),
                                lt->at("version").get<int>()};
    } else {
      auto plan = parse_plan_json(frame.header.at("plan").dump());
      if (const PlanError* e = std::get_if<PlanError>(&plan)) malformed(e->message);
      r.plan = std::get<LaunchPlan>(plan);
      r.cubin = frame.blob;
    }
    r.options = options_from_json(frame.header.value("options", nlohmann::json::object()));
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("evaluate: ") + e.what());
  }
  return r;
}

Frame verdict_frame(std::uint64_t id, const eval::Verdict& verdict, WorkerFate fate) {
  return {{{"type", "verdict"},
           {"id", id},
           {"verdict", eval::to_json(verdict)},
           {"worker", fate == WorkerFate::exits ? "exits" : "continues"}},
          {}};
}

VerdictMessage verdict_from_frame(const Frame& frame) {
  if (frame_type(frame) != "verdict") malformed("expected a verdict frame, got '" + frame_type(frame) + "'");
  VerdictMessage m;
  try {
    m.id = frame.header.at("id").get<std::uint64_t>();
    m.verdict = eval::verdict_from_json(frame.header.at("verdict"));
    m.fate = frame.header.value("worker", std::string("continues")) == "exits" ? WorkerFate::exits
                                                                             : WorkerFate::continues;
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("verdict: ") + e.what());
  }
  return m;
}

nlohmann::json to_json(const cublaslt::EnumerationOptions& o) {
  return {{"heuristics", o.heuristics},         {"splitk_algos", o.splitk_algos},
          {"splits", o.splits},                 {"max_candidates", o.max_candidates},
          {"max_workspace_bytes", o.max_workspace_bytes}};
}

cublaslt::EnumerationOptions enumeration_options_from_json(const nlohmann::json& j) {
  cublaslt::EnumerationOptions o;
  try {
    o.heuristics = j.value("heuristics", o.heuristics);
    o.splitk_algos = j.value("splitk_algos", o.splitk_algos);
    o.splits = j.value("splits", o.splits);
    o.max_candidates = j.value("max_candidates", o.max_candidates);
    o.max_workspace_bytes = j.value("max_workspace_bytes", o.max_workspace_bytes);
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("enumeration options: ") + e.what());
  }
  if (o.heuristics < 1 || o.heuristics > 1024) malformed(fmt::format("enumeration options: heuristics {}", o.heuristics));
  if (o.splitk_algos < 0 || o.max_candidates < 1)
    malformed(fmt::format("enumeration options: splitk_algos {}, max_candidates {}", o.splitk_algos, o.max_candidates));
  return o;
}

Frame enumerate_frame(std::uint64_t id, const EnumerateRequest& request) {
  return {{{"type", "enumerate_cublaslt"}, {"id", id}, {"key", request.key_line}, {"options", to_json(request.options)}},
          {}};
}

EnumerateRequest enumerate_request_from_frame(const Frame& frame) {
  if (frame_type(frame) != "enumerate_cublaslt") malformed("expected an enumerate_cublaslt frame");
  EnumerateRequest r;
  try {
    r.key_line = frame.header.at("key").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("enumerate_cublaslt: ") + e.what());
  }
  r.options = enumeration_options_from_json(frame.header.value("options", nlohmann::json::object()));
  return r;
}

Frame algos_frame(std::uint64_t id, const EnumerationResult& result, WorkerFate fate) {
  nlohmann::json h = {{"type", "cublaslt_algos"}, {"id", id}, {"worker", fate == WorkerFate::exits ? "exits" : "continues"}};
  if (const std::string* error = std::get_if<std::string>(&result)) {
    h["error"] = *error;
    return {std::move(h), {}};
  }
  const cublaslt::Enumeration& e = std::get<cublaslt::Enumeration>(result);
  nlohmann::json algos = nlohmann::json::array();
  for (const cublaslt::AlgoCandidate& c : e.algos)
    algos.push_back({{"algo", algo_hex(c.algo.bytes)}, {"workspace_bytes", c.algo.workspace_bytes},
                     {"version", c.algo.version}, {"description", c.description}, {"origin", c.origin},
                     {"waves", c.waves}});
  h["version"] = e.version;
  h["algos"] = std::move(algos);
  return {std::move(h), {}};
}

AlgosMessage algos_from_frame(const Frame& frame) {
  if (frame_type(frame) != "cublaslt_algos")
    malformed("expected a cublaslt_algos frame, got '" + frame_type(frame) + "'");
  AlgosMessage m;
  try {
    m.id = frame.header.at("id").get<std::uint64_t>();
    m.fate = frame.header.value("worker", std::string("continues")) == "exits" ? WorkerFate::exits
                                                                             : WorkerFate::continues;
    if (const auto error = frame.header.find("error"); error != frame.header.end()) {
      m.result = error->get<std::string>();
      return m;
    }
    cublaslt::Enumeration e;
    e.version = frame.header.at("version").get<int>();
    for (const auto& a : frame.header.at("algos")) {
      cublaslt::AlgoCandidate c;
      const auto bytes = algo_bytes_from_hex(a.at("algo").get<std::string>());
      if (!bytes) malformed("cublaslt_algos: an algorithm is not " + std::to_string(2 * kCublasLtAlgoBytes) + " hex digits");
      c.algo = {*bytes, a.at("workspace_bytes").get<std::uint64_t>(), a.value("version", e.version)};
      c.description = a.value("description", std::string());
      c.origin = a.value("origin", std::string());
      c.waves = a.value("waves", 0.0f);
      e.algos.push_back(std::move(c));
    }
    m.result = std::move(e);
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("cublaslt_algos: ") + e.what());
  }
  return m;
}

Frame shutdown_frame() { return {{{"type", "shutdown"}}, {}}; }

std::string frame_type(const Frame& frame) {
  const auto it = frame.header.find("type");
  return it != frame.header.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace kd::worker
