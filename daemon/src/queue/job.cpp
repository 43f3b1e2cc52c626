#include "queue/job.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <variant>

#include <nlohmann/json.hpp>


namespace kd::daemon {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, kJobStateCount> kStateNames{"queued", "running", "done",
                                                                   "failed", "cancelled"};
constexpr std::array<std::string_view, 2> kOriginNames{"miss", "prewarm"};
constexpr int kJobRecordSchema = 1;

}  // namespace

std::string_view to_string(JobState s) { return kStateNames.at(static_cast<std::size_t>(s)); }

std::string_view to_string(JobOrigin o) { return kOriginNames.at(static_cast<std::size_t>(o)); }

std::optional<JobOrigin> job_origin_from(std::string_view name) {
  for (std::size_t i = 0; i < kOriginNames.size(); ++i)
    if (kOriginNames[i] == name) return static_cast<JobOrigin>(i);
  return std::nullopt;
}

std::optional<JobState> job_state_from(std::string_view name) {
  for (std::size_t i = 0; i < kStateNames.size(); ++i)
    if (kStateNames[i] == name) return static_cast<JobState>(i);
  return std::nullopt;
}

double Job::priority() const noexcept {
  return static_cast<double>(std::max<std::uint64_t>(count, 1)) * est_call_us;
}

std::string serialize_job(const Job& j) {
  const json o{{"schema", kJobRecordSchema},
               {"state", to_string(j.state)},
               {"count", j.count},
               {"est_call_us", j.est_call_us},
               {"attempts", j.attempts},
               {"created_unix_ms", j.created_unix_ms},
               {"updated_unix_ms", j.updated_unix_ms},
               {"not_before_unix_ms", j.not_before_unix_ms},
               {"reason", j.reason},
               {"proposer", j.proposer},
               {"budgets",
                {{"rounds", j.budgets.rounds},
                 {"candidates", j.budgets.candidates},
                 {"wall_seconds", j.budgets.wall_seconds},
                 {"llm_tokens", j.budgets.llm_tokens}}},
               {"published_generation", j.published_generation},
               {"search_id", j.search_id},
               {"origin", to_string(j.origin)}};
  return o.dump();
}

std::optional<Job> parse_job(std::string_view key, std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded() || !o.is_object() || o.value("schema", 0) != kJobRecordSchema)
    return std::nullopt;
  try {
    Job j;
    j.key = std::string(key);
    const auto state = job_state_from(o.at("state").get<std::string>());
    if (!state) return std::nullopt;
    j.state = *state;
    j.count = o.at("count").get<std::uint64_t>();
    j.est_call_us = o.at("est_call_us").get<double>();
    j.attempts = o.at("attempts").get<std::uint32_t>();
    j.created_unix_ms = o.at("created_unix_ms").get<std::int64_t>();
    j.updated_unix_ms = o.at("updated_unix_ms").get<std::int64_t>();
    j.not_before_unix_ms = o.value("not_before_unix_ms", std::int64_t{0});
    j.reason = o.value("reason", std::string{});
    j.proposer = o.value("proposer", std::string{});
    if (const auto b = o.find("budgets"); b != o.end() && b->is_object()) {
      j.budgets.rounds = b->value("rounds", std::uint64_t{0});
      j.budgets.candidates = b->value("candidates", std::uint64_t{0});
      j.budgets.wall_seconds = b->value("wall_seconds", std::uint64_t{0});
      j.budgets.llm_tokens = b->value("llm_tokens", std::uint64_t{0});
    }
    j.published_generation = o.value("published_generation", std::uint64_t{0});
    j.search_id = o.value("search_id", std::string{});
    // Jobs stored before the field: counted calls mean an application missed the key.
    const auto origin = job_origin_from(o.value("origin", std::string{}));
    j.origin = origin ? *origin : (j.count > 0 ? JobOrigin::miss : JobOrigin::prewarm);
    return j;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

const std::optional<DevicePart>* ParsedKey::device() const noexcept {
  if (key) return &key->device;
  if (row) return &row->device;
  return nullptr;
}

std::string ParsedKey::full_line_on(const DevicePart& d) const {
  if (key) return key->with_device(d).full_line();
  if (row) return row->with_device(d).full_line();
  return {};
}

ParsedKey parse_job_key(std::string_view line) {
  auto parsed = parse_op_key(line);
  auto* op = std::get_if<OpKey>(&parsed);
  if (op == nullptr) return {};
  if (auto* row = std::get_if<RowKey>(op)) return ParsedKey{nullptr, std::make_shared<const RowKey>(std::move(*row))};
  return ParsedKey{std::make_shared<const GemmKey>(std::move(std::get<GemmKey>(*op))), nullptr};
}

double estimate_call_us(const ParsedKey& parsed) {
  if (parsed.row) return static_cast<double>(min_bytes(parsed.row->shape())) / (kNominalTBps * 1e6);
  if (!parsed.key) return 0;
  // A range's calls (issue 29) are estimated at its geometric middle.
  const GemmKey key = parsed.key->at_n(static_cast<std::int64_t>(
      std::sqrt(static_cast<double>(parsed.key->n) * static_cast<double>(parsed.key->n_last()))));
  const double compute_us = flops(key) / (kNominalTflops * 1e6);
  const double memory_us = static_cast<double>(min_bytes(key)) / (kNominalTBps * 1e6);
  return std::max(compute_us, memory_us);
}

const ParsedKey& ParsedKeys::of(const std::string& line, const ParsedKey& known) {
  if (const auto it = parses_.find(line); it != parses_.end()) return it->second;
  if (parses_.size() >= capacity_) parses_.clear();
  return parses_.emplace(line, known.parsed() ? known : parse_job_key(line)).first->second;
}

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace kd::daemon
