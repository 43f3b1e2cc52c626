#include "worker/protocol.hpp"

#include <variant>

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
          {"publish_margin", o.publish_margin},
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
    o.publish_margin = j.value("publish_margin", o.publish_margin);
    o.seed = j.value("seed", o.seed);
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("options: ") + e.what());
  }
  return o;
}

Frame evaluate_frame(std::uint64_t id, const eval::EvalRequest& request) {
  Frame f;
  f.header = {{"type", "evaluate"},
              {"id", id},
              {"key", request.key_line},
              {"plan", nlohmann::json::parse(plan_to_json(request.plan))},
              {"options", to_json(request.options)}};
  f.blob = request.cubin;
  return f;
}

eval::EvalRequest request_from_frame(const Frame& frame) {
  if (frame_type(frame) != "evaluate") malformed("expected an evaluate frame");
  eval::EvalRequest r;
  try {
    r.key_line = frame.header.at("key").get<std::string>();
    auto plan = parse_plan_json(frame.header.at("plan").dump());
    if (const PlanError* e = std::get_if<PlanError>(&plan)) malformed(e->message);
    r.plan = std::get<LaunchPlan>(plan);
    r.options = options_from_json(frame.header.value("options", nlohmann::json::object()));
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("evaluate: ") + e.what());
  }
  r.cubin = frame.blob;
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

Frame shutdown_frame() { return {{{"type", "shutdown"}}, {}}; }

std::string frame_type(const Frame& frame) {
  const auto it = frame.header.find("type");
  return it != frame.header.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace kd::worker
