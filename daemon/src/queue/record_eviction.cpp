#include "queue/record_eviction.hpp"

#include <algorithm>
#include <variant>

#include "common/error.hpp"
#include "store/record.hpp"
#include "store/record_usage.hpp"

namespace kd::daemon {
namespace {

constexpr std::int64_t kMillisPerSecond = 1000;

}  // namespace

std::uint64_t db_bytes(const lmdb::Txn& txn, MDB_dbi dbi) {
  MDB_stat st{};
  KD_MDB_CHECK(mdb_stat(txn.get(), dbi, &st), "mdb_stat");
  return static_cast<std::uint64_t>(st.ms_psize) *
         (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages);
}

std::vector<EvictionCandidate> lru_order(const lmdb::Txn& txn, const JobDbs& dbs) {
  std::vector<EvictionCandidate> plan;
  lmdb::for_each(txn, dbs.records, [&](std::string_view key, std::string_view value) {
    EvictionCandidate c{std::string(key), 0};
    const auto used = lmdb::get(txn, dbs.usage, key);
    if (const auto ms = used ? decode_usage(*used) : std::nullopt) {
      c.last_use_unix_ms = *ms;
    } else {
      const auto decoded = deserialize_record(value);
      if (const auto* r = std::get_if<Record>(&decoded)) c.last_use_unix_ms = r->created_unix_s * kMillisPerSecond;
    }
    plan.push_back(std::move(c));
  });
  std::stable_sort(plan.begin(), plan.end(), [](const EvictionCandidate& a, const EvictionCandidate& b) {
    return a.last_use_unix_ms < b.last_use_unix_ms;
  });
  return plan;
}

std::uint64_t evict_some(JobTxn& jt, const std::vector<EvictionCandidate>& plan, std::size_t& next,
                         std::uint64_t target_bytes, std::size_t limit) {
  const lmdb::Txn& txn = jt.txn();
  const JobDbs& dbs = jt.dbs();
  std::uint64_t removed = 0;
  for (; next < plan.size() && removed < limit && db_bytes(txn, dbs.records) > target_bytes; ++next) {
    const EvictionCandidate& c = plan[next];
    if (const auto used = lmdb::get(txn, dbs.usage, c.key)) {
      if (const auto ms = decode_usage(*used); ms && *ms > c.last_use_unix_ms) continue;  // hit since
    }
    const auto bytes = lmdb::get(txn, dbs.records, c.key);
    if (!bytes) continue;  // gone since the plan (kdctl evict)
    std::string search_id;
    {
      const auto decoded = deserialize_record(*bytes);  // before the delete: the view dies with it
      if (const auto* r = std::get_if<Record>(&decoded)) search_id = r->search_id;
    }
    lmdb::del(txn, dbs.records, c.key);
    lmdb::del(txn, dbs.usage, c.key);
    if (!search_id.empty()) lmdb::del(txn, dbs.trees, search_id);
    if (const auto job = jt.get(c.key); job && job->state == JobState::done) jt.erase(*job);
    ++removed;
  }
  return removed;
}

}  // namespace kd::daemon
