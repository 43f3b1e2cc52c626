#include "eval/verdict.hpp"

#include <array>
#include <utility>

#include "common/error.hpp"

namespace kd::eval {
namespace {

// One row per rule; the order is the enum's.
constexpr std::array<std::pair<Rule, std::string_view>, 22> kRuleNames{{
    {Rule::passed, "passed"},
    {Rule::not_faster, "not_faster"},
    {Rule::key_invalid, "key_invalid"},
    {Rule::compile_failed, "compile_failed"},
    {Rule::plan_invalid, "plan_invalid"},
    {Rule::load_failed, "load_failed"},
    {Rule::launch_failed, "launch_failed"},
    {Rule::unwritten_output, "unwritten_output"},
    {Rule::nan_or_inf, "nan_or_inf"},
    {Rule::wrong_result, "wrong_result"},
    {Rule::precision_below_class, "precision_below_class"},
    {Rule::input_modified, "input_modified"},
    {Rule::guard_band_overwritten, "guard_band_overwritten"},
    {Rule::workspace_guard_overwritten, "workspace_guard_overwritten"},
    {Rule::state_between_calls, "state_between_calls"},
    {Rule::nondeterministic, "nondeterministic"},
    {Rule::timed_output_mismatch, "timed_output_mismatch"},
    {Rule::faster_than_roofline, "faster_than_roofline"},
    {Rule::hang_timeout, "hang_timeout"},
    {Rule::crashed, "crashed"},
    {Rule::internal_error, "internal_error"},
    {Rule::read_before_grid_wait, "read_before_grid_wait"},
}};

nlohmann::json figures_json(const ErrorFigures& e) {
  return {{"max_rel", e.max_rel}, {"norm_rel", e.norm_rel}, {"lean", e.lean}};
}
ErrorFigures figures_from(const nlohmann::json& j) {
  // "lean" is absent from verdicts written before it was measured.
  return {j.at("max_rel").get<double>(), j.at("norm_rel").get<double>(), j.value("lean", 0.0)};
}
nlohmann::json time_json(const TimeStats& t) {
  return {{"median_us", t.median_us}, {"p25_us", t.p25_us}, {"p75_us", t.p75_us},
          {"samples", t.samples}};
}
TimeStats time_from(const nlohmann::json& j) {
  return {j.at("median_us").get<double>(), j.at("p25_us").get<double>(),
          j.at("p75_us").get<double>(), j.at("samples").get<int>()};
}

}  // namespace

std::string_view to_string(TimingRegime regime) {
  return regime == TimingRegime::serving ? "serving" : "isolated";
}

std::string_view to_string(Rule rule) {
  for (const auto& [r, name] : kRuleNames)
    if (r == rule) return name;
  return "unknown";
}

std::optional<Rule> rule_from_string(std::string_view name) {
  for (const auto& [r, n] : kRuleNames)
    if (n == name) return r;
  return std::nullopt;
}

const std::vector<Rule>& all_rules() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> v;
    for (const auto& row : kRuleNames) v.push_back(row.first);
    return v;
  }();
  return rules;
}

nlohmann::json to_json(const Verdict& v) {
  nlohmann::json j;
  j["rule"] = std::string(to_string(v.rule));
  j["detail"] = v.detail;
  j["failed_trial"] = v.failed_trial;
  j["candidate_error"] = figures_json(v.candidate_error);
  j["vendor_error"] = figures_json(v.vendor_error);
  nlohmann::json trials = nlohmann::json::array();
  for (const TrialReport& t : v.trials) {
    trials.push_back({{"trial", t.trial}, {"distribution", t.distribution}, {"alpha", t.alpha},
                      {"beta", t.beta}, {"candidate", figures_json(t.candidate)},
                      {"vendor", figures_json(t.vendor)}, {"allowed_max_rel", t.allowed_max_rel},
                      {"allowed_norm_rel", t.allowed_norm_rel}});
  }
  j["trials"] = std::move(trials);
  if (v.candidate_time) j["candidate_time"] = time_json(*v.candidate_time);
  if (v.baseline_time) j["baseline_time"] = time_json(*v.baseline_time);
  j["regime"] = std::string(to_string(v.regime));
  if (v.isolated_candidate_time) j["isolated_candidate_time"] = time_json(*v.isolated_candidate_time);
  if (v.isolated_baseline_time) j["isolated_baseline_time"] = time_json(*v.isolated_baseline_time);
  if (!v.baseline_name.empty()) j["baseline_name"] = v.baseline_name;
  if (v.stream_us > 0) j["stream_us"] = v.stream_us;
  if (v.serving_calls > 0) {
    j["serving_calls"] = v.serving_calls;
    j["serving_copies"] = v.serving_copies;
  }
  j["floor_us"] = v.floor_us;
  j["sm_clock_mhz"] = v.sm_clock_mhz;
  j["elapsed_s"] = v.elapsed_s;
  return j;
}

Verdict verdict_from_json(const nlohmann::json& j) {
  try {
    Verdict v;
    const std::string rule = j.at("rule").get<std::string>();
    const std::optional<Rule> r = rule_from_string(rule);
    if (!r) throw Error(ErrorDomain::data, 0, "verdict: unknown rule '" + rule + "'");
    v.rule = *r;
    v.detail = j.value("detail", "");
    v.failed_trial = j.value("failed_trial", -1);
    if (j.contains("candidate_error")) v.candidate_error = figures_from(j.at("candidate_error"));
    if (j.contains("vendor_error")) v.vendor_error = figures_from(j.at("vendor_error"));
    for (const nlohmann::json& t : j.value("trials", nlohmann::json::array())) {
      v.trials.push_back({t.at("trial").get<int>(), t.at("distribution").get<std::string>(),
                          t.at("alpha").get<double>(), t.at("beta").get<double>(),
                          figures_from(t.at("candidate")), figures_from(t.at("vendor")),
                          t.at("allowed_max_rel").get<double>(),
                          t.at("allowed_norm_rel").get<double>()});
    }
    if (j.contains("candidate_time")) v.candidate_time = time_from(j.at("candidate_time"));
    if (j.contains("baseline_time")) v.baseline_time = time_from(j.at("baseline_time"));
    // Absent in verdicts from before the serving regime, which were isolated.
    v.regime = j.value("regime", std::string("isolated")) == "serving" ? TimingRegime::serving : TimingRegime::isolated;
    if (j.contains("isolated_candidate_time")) v.isolated_candidate_time = time_from(j.at("isolated_candidate_time"));
    if (j.contains("isolated_baseline_time")) v.isolated_baseline_time = time_from(j.at("isolated_baseline_time"));
    if (j.contains("baseline_name")) v.baseline_name = j.at("baseline_name").get<std::string>();
    v.stream_us = j.value("stream_us", 0.0);
    v.serving_calls = j.value("serving_calls", 0);
    v.serving_copies = j.value("serving_copies", 0);
    v.floor_us = j.value("floor_us", 0.0);
    v.sm_clock_mhz = j.value("sm_clock_mhz", 0);
    v.elapsed_s = j.value("elapsed_s", 0.0);
    return v;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorDomain::data, 0, std::string("verdict: malformed: ") + e.what());
  }
}

}  // namespace kd::eval
