// Least-recently-used eviction of records, as ccache evicts by last use: the daemon's
// `max_cache_bytes`. Last use comes from the `usage` database (store/record_usage.hpp): the later
// of a record's publication and the last hit applications reported; a record without a usage
// entry counts by its created_unix_s, and one that does not decode goes first.
//
// Size is the records database's pages (mdb_stat: O(1), exact after every delete), so eviction
// stops as soon as the pages in use are at most the target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "queue/job_store.hpp"

namespace kd::daemon {

struct EvictionCandidate {
  std::string key;               // full key line of the record
  std::int64_t last_use_unix_ms = 0;
};

// Bytes of the pages database `dbi` occupies (branch, leaf and overflow pages).
std::uint64_t db_bytes(const lmdb::Txn& txn, MDB_dbi dbi);

// Every record, least recently used first (ties in key order). Reads every record's key and
// usage entry, and decodes only records without one.
std::vector<EvictionCandidate> lru_order(const lmdb::Txn& txn, const JobDbs& dbs);

// In `jt`'s transaction: removes candidates from `next` on while the records take more than
// `target_bytes`, at most `limit` of them, each with its usage entry, its search tree and its
// job when that is done (a later miss then queues the key afresh). A candidate used after the
// plan was made (its usage entry is later now) is kept. Advances `next` past every candidate it
// looked at; returns how many records it removed.
std::uint64_t evict_some(JobTxn& jt, const std::vector<EvictionCandidate>& plan, std::size_t& next,
                         std::uint64_t target_bytes, std::size_t limit);

}  // namespace kd::daemon
