#include "remote/record_verifier.hpp"

#include <fmt/format.h>

#include "driver/winner_record.hpp"
#include "driver/worker_backend.hpp"
#include "eval/verdict.hpp"
#include "range/range_search.hpp"
#include "worker/worker_parent.hpp"

namespace kd::daemon {
namespace {

// A record gets as long as a candidate gets in a search before its worker counts as hung.
constexpr std::chrono::seconds kWatchdog{60};

class Unavailable final : public RecordVerifier {
public:
  explicit Unavailable(std::string why) : why_(std::move(why)) {}
  std::optional<std::string> unavailable() const override { return why_; }
  GateResult verify(const Record&) override { return {false, why_}; }

private:
  std::string why_;
};

class WorkerGate final : public RecordVerifier {
public:
  WorkerGate(int ordinal, const std::filesystem::path& cache_dir)
      : backend_(worker::default_worker_spawn(ordinal, cache_dir), kWatchdog) {}
  std::optional<std::string> unavailable() const override { return std::nullopt; }
  GateResult verify(const Record& record) override {
    // A range record (issue 29) is gated at the points its search checked.
    const eval::Verdict v = record.key_line.find("..") != std::string::npos
                                ? search::range::verify_range_record(backend_, record)
                                : backend_.evaluate(search::evaluation_request(record));
    return {v.correct(), fmt::format("{}: {}", eval::to_string(v.rule), v.detail)};
  }

private:
  search::WorkerBackend backend_;
};

}  // namespace

std::unique_ptr<RecordVerifier> make_record_verifier(const Config& config, const std::string& why_no_backend) {
  if (!why_no_backend.empty())
    return std::make_unique<Unavailable>(fmt::format("this machine's gate needs a GPU ({})", why_no_backend));
  if (config.workers == "none") return std::make_unique<Unavailable>("this machine's gate needs a GPU (workers = none)");
  int ordinal = 0;
  if (config.workers != "auto") ordinal = std::stoi(config.workers.substr(0, config.workers.find(',')));
  return std::make_unique<WorkerGate>(ordinal, config.cache_dir);
}

}  // namespace kd::daemon
