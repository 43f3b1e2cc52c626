// Issue 29: a miss for an untuned n becomes a search for its bucket (key/n_buckets.hpp), not for
// the single n, so that one range record serves every n of a bucket and a server with hundreds of
// distinct token counts queues a few searches instead of hundreds. The job queue asks here where
// an application's miss becomes a job (JobQueue::report_misses); prewarm keys are queued as given.
#pragma once

#include <optional>
#include <string>

#include "key/n_buckets.hpp"

namespace kd::daemon {

// The bucket line of a miss's canonical key line: the same key with n=LO..HI, where [LO, HI] is the
// bucket of its n. nullopt when the miss stays a job of its own: buckets off, its n above the
// last edge or alone in its bucket, a key that is already a range, or a line that does not parse.
std::optional<std::string> bucket_line(const std::string& canonical_line, const NBuckets& buckets);

}  // namespace kd::daemon
