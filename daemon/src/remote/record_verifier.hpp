// This machine's gate for records from the tier (remote_trust = "verify"): the check `kdctl verify`
// runs, in a kdispatch-worker of its own on this daemon's first search GPU. It re-runs the
// validation gate (fp64 reference, poison, guard bands, the error criterion) on the record's own
// cubin or cuBLASLt algorithm: seconds per record, not a search.
//
// A record that a daemon elsewhere forged or damaged in a way its checksum does not show fails
// here and is rejected (failed_gate). Where no GPU can run the gate (no driver, workers = none),
// unavailable() says why, and the tier holds such records back instead of publishing them.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "store/record.hpp"

namespace kd::daemon {

struct GateResult {
  bool passed = false;
  std::string detail;  // the verdict's rule and detail, for the log (never shown to applications)
};

class RecordVerifier {
public:
  virtual ~RecordVerifier() = default;
  // nullopt when the gate can run here; else why not, in words.
  virtual std::optional<std::string> unavailable() const = 0;
  // Runs the gate on `record` (blocking, seconds). Only when unavailable() is nullopt.
  virtual GateResult verify(const Record& record) = 0;
};

// The verifier of `config`: a worker on the first device `workers` names, or one that says why it
// cannot run (`why_no_backend` is the daemon's search backend message when it has none).
std::unique_ptr<RecordVerifier> make_record_verifier(const Config& config, const std::string& why_no_backend);

}  // namespace kd::daemon
