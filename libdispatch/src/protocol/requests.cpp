#include "protocol/requests.hpp"

namespace kd::protocol {

using nlohmann::json;

namespace {
constexpr std::string_view kKeyLines = "an array of key lines";
}  // namespace

void to_json(json& j, const RejectedKey& m) { j = {{"key", m.key}, {"message", m.message}}; }
void from_json(const json& j, RejectedKey& m) {
  field::required(j, "key", m.key);
  field::required(j, "message", m.message);
}

void to_json(json& j, const MissAck& m) { j = {{"accepted", m.accepted}, {"rejected", m.rejected}}; }
void from_json(const json& j, MissAck& m) {
  field::required(j, "accepted", m.accepted);
  field::required(j, "rejected", m.rejected);
}

void to_json(json& j, const PrewarmOk& m) { j = {{"queued", m.queued}, {"rejected", m.rejected}}; }
void from_json(const json& j, PrewarmOk& m) {
  field::required(j, "queued", m.queued);
  field::required(j, "rejected", m.rejected);
}

void to_json(json& j, const PrewarmBudgets& m) {
  j = json::object();
  if (m.rounds != 0) j["rounds"] = m.rounds;
  if (m.candidates != 0) j["candidates"] = m.candidates;
  if (m.wall_seconds != 0) j["wall_seconds"] = m.wall_seconds;
  if (m.llm_tokens != 0) j["llm_tokens"] = m.llm_tokens;
}
void from_json(const json& j, PrewarmBudgets& m) {
  field::optional(j, "rounds", m.rounds);
  field::optional(j, "candidates", m.candidates);
  field::optional(j, "wall_seconds", m.wall_seconds);
  field::optional(j, "llm_tokens", m.llm_tokens);
}

void to_json(json& j, const Prewarm& m) {
  j = {{"keys", m.keys}};
  if (!m.proposer.empty()) j["proposer"] = m.proposer;
  if (m.budgets != PrewarmBudgets{}) j["budgets"] = m.budgets;
}
void from_json(const json& j, Prewarm& m) {
  field::required(j, "keys", m.keys, kKeyLines);
  field::optional(j, "proposer", m.proposer);
  field::optional(j, "budgets", m.budgets);
}

void to_json(json& j, const StatusQuery& m) {
  j = json::object();
  if (m.jobs != 0) j["jobs"] = m.jobs;
}
void from_json(const json& j, StatusQuery& m) { field::optional(j, "jobs", m.jobs); }

void to_json(json& j, const JobsReply& m) {
  j = {{"jobs", m.jobs}};
  field::put_optional(j, "jobs_omitted", m.jobs_omitted);
}
void from_json(const json& j, JobsReply& m) {
  field::required(j, "jobs", m.jobs);
  field::optional(j, "jobs_omitted", m.jobs_omitted);
}

void to_json(json& j, const JobsQuery& m) { j = {{"keys", m.keys}}; }
void from_json(const json& j, JobsQuery& m) {
  field::required(j, "keys", m.keys, kKeyLines);
  if (m.keys.size() > kMaxJobsPerRequest)
    field::fail("protocol: jobs asks for " + std::to_string(m.keys.size()) + " keys; at most " +
                std::to_string(kMaxJobsPerRequest) + " per request");
}

void to_json(json& j, const CacheChangedOk& m) {
  j = {{"generation", m.generation}, {"previous_generation", m.previous_generation}, {"subscribers", m.subscribers}};
}
void from_json(const json& j, CacheChangedOk& m) {
  field::required(j, "generation", m.generation);
  field::required(j, "previous_generation", m.previous_generation);
  field::required(j, "subscribers", m.subscribers);
}

void to_json(json& j, const CacheChanged& m) {
  j = {{"keys", m.keys}};
  field::put_optional(j, "count", m.count);
}
void from_json(const json& j, CacheChanged& m) {
  field::optional(j, "keys", m.keys, kKeyLines);
  field::optional(j, "count", m.count);
}

void to_json(json& j, const StatsQuery&) { j = json::object(); }
void from_json(const json&, StatsQuery&) {}

void to_json(json& j, const StatsZeroed& m) { j = {{"zeroed", m.zeroed}}; }
void from_json(const json& j, StatsZeroed& m) { field::required(j, "zeroed", m.zeroed); }

void to_json(json& j, const ZeroStats&) { j = json::object(); }
void from_json(const json&, ZeroStats&) {}

void to_json(json& j, const CancelOk& m) {
  j = {{"cancelled", m.cancelled}};
  field::put_optional(j, "message", m.message);
}
void from_json(const json& j, CancelOk& m) {
  field::required(j, "cancelled", m.cancelled);
  field::optional(j, "message", m.message);
}

void to_json(json& j, const Cancel& m) { j = {{"key", m.key}}; }
void from_json(const json& j, Cancel& m) { field::required(j, "key", m.key); }

void to_json(json& j, const PurgedJobs& m) {
  j = {{"done", m.done}, {"failed", m.failed}, {"cancelled", m.cancelled}};
}
void from_json(const json& j, PurgedJobs& m) {
  field::required(j, "done", m.done);
  field::required(j, "failed", m.failed);
  field::required(j, "cancelled", m.cancelled);
}

void to_json(json& j, const PurgeOk& m) { j = {{"removed", m.removed}, {"total", m.total}, {"dry_run", m.dry_run}}; }
void from_json(const json& j, PurgeOk& m) {
  field::required(j, "removed", m.removed);
  field::required(j, "total", m.total);
  field::required(j, "dry_run", m.dry_run);
}

void to_json(json& j, const Purge& m) {
  j = json::object();
  if (!m.states.empty()) j["states"] = m.states;
  if (m.older_than_s != 0) j["older_than_s"] = m.older_than_s;
  if (m.dry_run) j["dry_run"] = true;
}
void from_json(const json& j, Purge& m) {
  field::optional(j, "states", m.states, "an array of job states");
  field::optional(j, "older_than_s", m.older_than_s);
  field::optional(j, "dry_run", m.dry_run);
}

void to_json(json& j, const ShutdownOk&) { j = json::object(); }
void from_json(const json&, ShutdownOk&) {}

void to_json(json& j, const Shutdown&) { j = json::object(); }
void from_json(const json&, Shutdown&) {}

}  // namespace kd::protocol
