// A job of the persistent queue: one per canonical key line, stored as a JSON object in the
// cache's "jobs" database under that line. The daemon is the only writer.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "key/gemm_key.hpp"
#include "key/row_key.hpp"

namespace kd::daemon {

// Numbered like stats counters: values are persisted by name, never by number.
enum class JobState : std::uint8_t { queued, running, done, failed, cancelled };
inline constexpr std::size_t kJobStateCount = 5;
std::string_view to_string(JobState s);
std::optional<JobState> job_state_from(std::string_view name);

// Who queued the job (issue 29 item 4): it picks the share of the GPU its search may take
// (search_duty_cycle for misses, prewarm_duty_cycle for prewarm). Persisted by name.
enum class JobOrigin : std::uint8_t {
  miss,     // an application missed the key: the search runs beside that application
  prewarm,  // kdctl prewarm asked for it (or re-queued it): full speed unless configured otherwise
};
std::string_view to_string(JobOrigin o);
std::optional<JobOrigin> job_origin_from(std::string_view name);

// Per-job search budgets; 0 means "use the daemon's configured default".
struct JobBudgets {
  std::uint64_t rounds = 0;
  std::uint64_t candidates = 0;
  std::uint64_t wall_seconds = 0;
  std::uint64_t llm_tokens = 0;
  bool operator==(const JobBudgets&) const = default;
};

// A job's key line parsed: made once, when a miss or prewarm brings the line (the server's
// canonical form), and shared by every copy of the job, so that neither claims nor the search
// parse the line again. In memory only: the stored job keeps its line. A job's key is a GEMM's
// (`key`) or, since issue 33, a row operator's (`row`): at most one is set, neither where the line
// does not parse (a record edited by hand); equal when the keys are. GEMM-only steps (buckets,
// ranges, cuBLASLt, the fleet's tier) read `key` and leave row jobs exact and local.
struct ParsedKey {
  std::shared_ptr<const GemmKey> key;
  std::shared_ptr<const RowKey> row;
  bool parsed() const noexcept { return key || row; }
  // The key's device part (null when the line has none, or did not parse).
  const std::optional<DevicePart>* device() const noexcept;
  // The full key line on `device` (the key's own device part replaced); empty when not parsed.
  // Throws as GemmKey::full_line / RowKey::full_line do.
  std::string full_line_on(const DevicePart& device) const;
  bool operator==(const ParsedKey& o) const noexcept {
    return (key == o.key || (key && o.key && *key == *o.key)) && (row == o.row || (row && o.row && *row == *o.row));
  }
};
// Parses `line`, any operator's (the queue's fallback for lines that did not come through the server).
ParsedKey parse_job_key(std::string_view line);

struct Job {
  std::string key;  // canonical line (full key with device part, or a shape line)
  ParsedKey parsed;  // `key` parsed; set on the jobs claim_next returns and on new jobs (not stored)
  JobState state = JobState::queued;
  std::uint64_t count = 0;          // calls reported by clients (sum of miss counts)
  double est_call_us = 0;           // nominal roofline time of one call (estimate_call_us)
  std::uint32_t attempts = 0;       // runs started (a crash or hang counts)
  std::int64_t created_unix_ms = 0;
  std::int64_t updated_unix_ms = 0;
  std::int64_t not_before_unix_ms = 0;  // backoff: not scheduled before this time
  std::string reason;                   // why failed/cancelled, or the last attempt's trouble
  std::string proposer;                 // requested proposer; empty = daemon default
  JobBudgets budgets;
  std::uint64_t published_generation = 0;  // generation of the winner's commit when done
  std::string search_id;  // the last search's id: its tree in the cache's `trees` database
  // Set when the job is queued: by a miss, or by a prewarm (which also claims a job a miss queued).
  JobOrigin origin = JobOrigin::miss;

  bool operator==(const Job&) const = default;
  // What the scheduler maximises: estimated microseconds the application spends in this call
  // (calls seen x nominal call time); prewarmed keys with no calls count as one call.
  double priority() const noexcept;
};

// The JSON text stored in LMDB (key excluded: it is the LMDB key).
std::string serialize_job(const Job& job);
// nullopt when the text is not a job record (damaged or from a future schema).
std::optional<Job> parse_job(std::string_view key, std::string_view text);

// Nominal time of one call of the GEMM or row operator a key names, from its roofline at nominal
// peak rates (kNominalTflops, kNominalTBps; a row operator's bytes alone); 0 for a key that did not
// parse. Only for ordering jobs: the
// search measures real times.
inline constexpr double kNominalTflops = 400.0;
inline constexpr double kNominalTBps = 2.0;
double estimate_call_us(const ParsedKey& key);

// The parses of canonical lines the job queue has seen, remembered on its writer thread so that a
// claim looks a queued job's parse up instead of parsing its line on every claim: new jobs bring
// the server's parse, jobs stored before the daemon started are parsed at their first claim. At
// most `capacity` lines; when full it starts over (jobs keep the parses they carry).
class ParsedKeys {
public:
  explicit ParsedKeys(std::size_t capacity) : capacity_(capacity) {}
  // The parse of `line`: the one remembered, else `known` when set, else parsed now; remembered.
  const ParsedKey& of(const std::string& line, const ParsedKey& known = {});

private:
  std::size_t capacity_;
  std::unordered_map<std::string, ParsedKey> parses_;
};

std::int64_t unix_ms_now();

}  // namespace kd::daemon
