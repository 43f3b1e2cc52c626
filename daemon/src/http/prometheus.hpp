// What the daemon's counter sets (http/metrics.hpp, remote/remote_counters.hpp) share: counters
// numbered by an enum, counters by one label's value, and the Prometheus text exposition (format
// 0.0.4) they are written in. Counters only go up.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

namespace kd::daemon {

// Counters numbered by the enum `E`, whose last enumerator is count_. Lock-free.
template <class E>
class CounterArray {
public:
  void add(E c, std::uint64_t n = 1) noexcept { at(c).fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t get(E c) const noexcept { return at(c).load(std::memory_order_relaxed); }

private:
  std::atomic<std::uint64_t>& at(E c) noexcept { return counters_[static_cast<std::size_t>(c)]; }
  const std::atomic<std::uint64_t>& at(E c) const noexcept { return counters_[static_cast<std::size_t>(c)]; }
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(E::count_)> counters_{};
};

// Counters by the value of one label (a reason). Thread-safe.
class LabelledCounter {
public:
  void add(std::string_view value, std::uint64_t n = 1);
  std::map<std::string, std::uint64_t> values() const;

private:
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t, std::less<>> values_;
};

// One row of a counter table: the counter, its name in stats JSON and in the exposition
// (kdispatch_<prefix><name>_total), and its HELP text.
template <class E>
struct CounterRow {
  E counter;
  std::string_view name;
  std::string_view help;
};

// A label value escaped as the exposition format asks (backslash, double quote, newline).
std::string escape_label(std::string_view value);
// "# HELP name help" and "# TYPE name type" (counter or gauge).
void append_family(std::string& out, std::string_view name, std::string_view type, std::string_view help);
// A family of one unlabelled sample.
void append_metric(std::string& out, std::string_view name, std::string_view type, std::string_view help,
                   std::uint64_t value);
// A counter family with one sample per value of `label` (none when `values` is empty).
void append_labelled_counter(std::string& out, std::string_view name, std::string_view help,
                             std::string_view label, const std::map<std::string, std::uint64_t>& values);

// Every row of `rows` as the counter kdispatch_<prefix><name>_total, valued by counters.get().
template <class E, class Counters>
void append_counters(std::string& out, std::string_view prefix, std::span<const CounterRow<E>> rows,
                     const Counters& counters) {
  for (const CounterRow<E>& row : rows)
    append_metric(out, "kdispatch_" + std::string(prefix) + std::string(row.name) + "_total", "counter", row.help,
                  counters.get(row.counter));
}

}  // namespace kd::daemon
