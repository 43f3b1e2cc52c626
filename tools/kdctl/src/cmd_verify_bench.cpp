// kdctl verify: re-runs the gate on the stored records of this GPU and evicts those that fail.
// kdctl bench FILE: tuned vs cuBLAS vs the roofline per shape, as a table and a PNG chart; a range
// n=LO..HI (issue 29) is timed at its range gate's timed points.
// Both run candidates in the sandboxed worker, exactly as the search does. Row operators' records
// and shapes (issue 33) go through the same gate, against the framework's kernel.
#include <algorithm>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "baseline_label.hpp"
#include "cache_snapshot.hpp"
#include "commands.hpp"
#include "cuda/device.hpp"
#include "daemon_link.hpp"
#include "cuda/driver.hpp"
#include "driver/winner_record.hpp"
#include "driver/worker_backend.hpp"
#include "eval/cublaslt_enumeration.hpp"
#include "range/range_gate.hpp"
#include "range/range_search.hpp"
#include "eval/framework_baseline.hpp"
#include "eval/timing_stats.hpp"
#include "eval/verdict.hpp"
#include "kdctl.hpp"
#include "png_chart.hpp"
#include "shape_list.hpp"
#include "store/cache_store.hpp"
#include "verify_selection.hpp"
#include "worker/worker_parent.hpp"

namespace kd::kdctl {
namespace {

struct GpuArgs {
  std::string cache_dir;
  std::string socket;  // verify: the daemon told of the evictions (empty: the default socket)
  int device = 0;
  int watchdog_s = 60;
};

std::optional<DeviceInfo> gpu_or_complain(const char* cmd, int device) {
  if (cu_device_count() <= device) {
    std::fprintf(stderr, "kdctl %s: no usable GPU (%s)\n", cmd,
                 cu_unavailable_reason().empty() ? "no such device" : cu_unavailable_reason().c_str());
    return std::nullopt;
  }
  return query_device(device);
}

eval::Verdict evaluate(search::WorkerBackend& backend, const Record& r) {
  // A range record (issue 29) is gated at the points its search checked.
  if (r.key_line.find("..") != std::string::npos) return search::range::verify_range_record(backend, r);
  return backend.evaluate(search::evaluation_request(r));
}

// For a shape with no record: the exact cuBLAS call timed the way the gate times a baseline, with
// the roofline floor. The worker times the baseline interleaved with a candidate, so cuBLASLt's
// first heuristic algorithm (what cuBLAS itself would pick, near enough) stands in as the
// candidate. nullopt when that cannot run (no cuBLASLt, the algorithm fails the gate).
std::optional<eval::Verdict> time_cublas(search::WorkerBackend& backend, const GemmKey& key) {
  cublaslt::EnumerationOptions one;
  one.heuristics = 1;
  one.splitk_algos = 0;
  one.max_candidates = 1;
  auto algos = backend.cublaslt_algos(key, one);
  const auto* e = std::get_if<cublaslt::Enumeration>(&algos);
  if (e == nullptr || e->algos.empty()) return std::nullopt;
  eval::EvalRequest request;
  request.key_line = key.full_line();
  request.cublaslt = e->algos.front().algo;
  eval::Verdict v = backend.evaluate(request);
  if (!v.baseline_time) return std::nullopt;
  return v;
}

std::string us(const std::optional<eval::TimeStats>& t) { return t ? fmt::format("{:.1f}", t->median_us) : "-"; }

// One record's line: its rule, times and shape line. A GEMM's times are against cuBLAS; a row
// operator's (issue 33) against the framework's kernel its verdict names, after the shape.
void print_verified(const OpKey& key, const eval::Verdict& v) {
  const std::string rule(eval::to_string(v.rule));
  if (!is_row(key)) {
    std::printf("%-16s %8s us vs cuBLAS %8s us  %s\n", rule.c_str(), us(v.candidate_time).c_str(),
                us(v.baseline_time).c_str(), op_shape_line(key).c_str());
    return;
  }
  std::printf("%-16s %8s us vs %8s us  %s  (baseline: %s)\n", rule.c_str(), us(v.candidate_time).c_str(),
              us(v.baseline_time).c_str(), op_shape_line(key).c_str(), baseline_of(key, v).c_str());
}

int run_verify(const GpuArgs& a, bool dry_run) {
  const auto dev = gpu_or_complain("verify", a.device);
  if (!dev) return kNoGpu;
  const std::filesystem::path dir = resolve_cache_dir(a.cache_dir);
  require_cache(dir);
  VerifySelection selected;
  {
    CacheSnapshot snap(dir);
    selected = select_for_verify(snap, dev->arch, dev->name);
  }
  const std::vector<Record>& mine = selected.records;
  std::printf("verifying %zu records for %s on device %d\n", mine.size(), dev->name.c_str(), a.device);
  search::WorkerBackend backend(worker::default_worker_spawn(a.device, dir), std::chrono::seconds(a.watchdog_s));
  std::vector<std::string> failed;
  for (const Record& r : mine) {
    const OpKey key = std::get<OpKey>(parse_op_key(r.key_line));  // select_for_verify parsed it
    if (r.kind == RecordKind::vendor) {  // the baseline runs (cuBLAS, or a row's framework kernel): nothing of ours
      std::printf("%-16s %8s    %8s     %s%s\n", is_row(key) ? "verdict" : "vendor", "-", "-",
                  op_shape_line(key).c_str(), is_row(key) ? "  (the framework's kernel kept)" : "");
      continue;
    }
    const eval::Verdict v = evaluate(backend, r);
    print_verified(key, v);
    if (!v.correct()) {
      std::printf("    %s\n", v.detail.c_str());
      failed.push_back(r.key_line);
    }
  }
  for (const std::string& k : selected.damaged)
    std::printf("damaged record (does not decode or its key line does not parse): %s\n", k.c_str());
  if (!dry_run && !failed.empty()) {
    {
      CacheWriter writer(dir);
      for (const std::string& k : failed) writer.evict(k);
    }
    print_daemon_notice("kdctl verify", tell_daemon_cache_changed(socket_of(DaemonArgs{a.socket, dir.string()}), dir, failed));
  }
  std::printf("%zu passed, %zu failed%s\n", mine.size() - failed.size(), failed.size(),
              failed.empty() ? "" : dry_run ? " (dry run: nothing evicted)" : " (evicted)");
  return failed.empty() ? kOk : kFailure;
}

// One row of the bench table and its chart bar.
// `base` and `ibase` are the baseline's times: cuBLAS's for a GEMM, the framework kernel's for a row
// operator (issue 33).
struct BenchRow {
  std::string base = "-", tuned = "-", speedup = "-", st = "-", sc = "-", ibase = "-", ituned = "-", ispeed = "-",
              roof = "-", note;
  ChartBar bar;
};

std::string pct(double part, double whole) {
  return part > 0 && whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : std::string("-");
}

// The row of an untuned shape: the exact cuBLAS call timed, with its floor fraction.
BenchRow cublas_row(search::WorkerBackend& backend, const GemmKey& key, std::string note) {
  BenchRow row;
  row.note = std::move(note);
  if (const auto v = time_cublas(backend, key)) {
    const double c = v->baseline_time->median_us;
    row.base = fmt::format("{:.1f}", c);
    row.speedup = "1.00x";
    row.sc = pct(v->stream_us, c);
    if (v->isolated_baseline_time) row.ibase = fmt::format("{:.1f}", v->isolated_baseline_time->median_us);
    row.roof = pct(v->floor_us, c);
    row.bar.speedup = row.bar.speedup_isolated = 1.0;
    row.bar.stream_frac = row.bar.stream_cublas = v->stream_us > 0 ? v->stream_us / c : 0;
  }
  return row;
}

// The row of a tuned kernel from its verdict at the row's n; `served_by` follows the proposer in
// the note ("(range 33..64)" for a range record).
BenchRow tuned_row(const eval::Verdict& v, const Record& r, const std::string& served_by) {
  BenchRow row;
  if (!v.correct() || !v.candidate_time || !v.baseline_time) {
    row.note = fmt::format("stored kernel fails now: {} (kdctl verify evicts it)", eval::to_string(v.rule));
    return row;
  }
  const double c = v.baseline_time->median_us, t = v.candidate_time->median_us;
  row.base = fmt::format("{:.1f}", c);
  row.tuned = fmt::format("{:.1f}", t);
  row.speedup = fmt::format("{:.2f}x", c / t);
  row.st = pct(v.stream_us, t);
  row.sc = pct(v.stream_us, c);
  row.roof = pct(v.floor_us, t);
  row.bar.speedup = c / t;
  row.bar.tuned = true;
  row.bar.stream_frac = v.stream_us > 0 ? v.stream_us / t : 0;
  row.bar.stream_cublas = v.stream_us > 0 ? v.stream_us / c : 0;
  if (v.isolated_candidate_time && v.isolated_baseline_time) {
    const double ic = v.isolated_baseline_time->median_us, it = v.isolated_candidate_time->median_us;
    row.ibase = fmt::format("{:.1f}", ic);
    row.ituned = fmt::format("{:.1f}", it);
    row.ispeed = fmt::format("{:.2f}x", ic / it);
    row.bar.speedup_isolated = ic / it;
  }
  // Who made it and, for a compiled kernel, its main entry point (which builtin family won): the
  // launch with the most shared memory, the first on a tie (helper launches before or after the
  // main kernel, such as a split of B or a split-K sum, use none).
  row.note = r.proposer;
  if (r.kind == RecordKind::nvrtc_kernel && !r.plan.launches.empty()) {
    const auto main = std::max_element(r.plan.launches.begin(), r.plan.launches.end(),
                                       [](const auto& x, const auto& y) { return x.smem_bytes < y.smem_bytes; });
    row.note += " " + main->entry;
  }
  if (!served_by.empty()) row.note += " " + served_by;
  return row;
}

// "(range 33..64)" for a record whose key is a range of n, else "".
// The note of a shape a vendor verdict answers: searched, and cuBLAS stayed the fastest.
std::string vendor_note(const Record& r) {
  const std::string line = r.key_line.find("..") != std::string::npos ? " (its bucket's)" : "";
  return r.candidate_us > 0 ? fmt::format("cuBLAS kept: vendor verdict{}, best candidate {:.1f} us vs {:.1f} us", line,
                                          r.candidate_us, r.baseline_us)
                            : fmt::format("cuBLAS kept: vendor verdict{}, no correct candidate", line);
}

std::string range_tag(const Record& r) {
  const auto parts = split_key(r.key_line);
  if (!parts || !parts->key.is_range()) return {};
  return fmt::format("(range {}..{})", parts->key.n, parts->key.n_hi);
}

// The rows of one shape line: an exact n timed with the record that serves it (its own, else the
// narrowest range record covering n, at the grid its rule gives n); a range n=LO..HI timed at the
// range gate's timed points, with its range record held to the whole gate (issue 29).
std::vector<std::pair<GemmKey, BenchRow>> bench_shape(search::WorkerBackend& backend, const CacheReader& reader,
                                                      const GemmKey& key) {
  std::vector<std::pair<GemmKey, BenchRow>> rows;
  if (!key.is_range()) {
    const auto hit = reader.lookup_covering(key.full_line());
    const Record* r = std::get_if<Record>(&hit);
    if (r == nullptr) {
      rows.emplace_back(key, cublas_row(backend, key, fmt::format("cuBLAS kept: no tuned kernel ({})",
                                                                  to_string(std::get<LookupMiss>(hit)))));
    } else if (r->kind == RecordKind::vendor) {
      rows.emplace_back(key, cublas_row(backend, key, vendor_note(*r)));
    } else if (r->key_line == key.full_line()) {
      rows.emplace_back(key, tuned_row(evaluate(backend, *r), *r, ""));
    } else {
      // Checked at load (range_data_sound): the rule gives every covered n a grid.
      eval::EvalRequest req{key.full_line(), r->cubin, std::get<LaunchPlan>(plan_at_n(r->plan, key.n)), {}, std::nullopt};
      rows.emplace_back(key, tuned_row(backend.evaluate(req), *r, range_tag(*r)));
    }
    return rows;
  }
  const auto hit = reader.lookup(key.full_line());
  const Record* r = std::get_if<Record>(&hit);
  if (r == nullptr || r->kind == RecordKind::vendor) {
    const std::string note = r != nullptr ? vendor_note(*r)
                                          : fmt::format("cuBLAS kept: no tuned kernel for n={}..{} ({})", key.n,
                                                        key.n_hi, to_string(std::get<LookupMiss>(hit)));
    for (const std::int64_t n : search::range::range_points(key.n, key.n_hi, LaunchPlan{}).timed)
      rows.emplace_back(key.at_n(n), cublas_row(backend, key.at_n(n), note));
    return rows;
  }
  const search::range::RangeGate gate = search::range::gate_range_kernel(backend, key, r->cubin, r->plan, {},
                                                                         search::range::GateStop::first_incorrect);
  if (!gate.correct()) {
    BenchRow row;
    row.note = fmt::format("stored range kernel fails now: {} (kdctl verify evicts it)", gate.failure);
    rows.emplace_back(gate.results.empty() ? key.at_n(key.n_hi) : key.at_n(gate.results.back().n), row);
    return rows;
  }
  for (const search::range::PointResult& p : gate.results)
    if (p.timed) rows.emplace_back(key.at_n(p.n), tuned_row(p.verdict, *r, range_tag(*r)));
  return rows;
}

// The row of a row operator's shape (issue 33) where the framework's kernel runs: that kernel timed
// alone as the worker times a row gate's baseline (eval/framework_baseline.hpp: PyTorch through
// python3, both regimes), its name after `note`; not timed where torch cannot run, and the note
// says why.
BenchRow framework_row(const RowKey& key, int device, std::string note) {
  BenchRow row;
  row.note = std::move(note);
  auto times = eval::framework_times(key.shape(), device);
  if (const auto* why = std::get_if<std::string>(&times)) {
    row.note += fmt::format("; not timed: {}", *why);
    return row;
  }
  const auto& t = std::get<eval::FrameworkTimes>(times);
  const eval::TimeStats serving = eval::summarize(t.serving_us), isolated = eval::summarize(t.isolated_us);
  row.note += fmt::format(" ({})", t.name);
  if (serving.median_us <= 0) return row;
  row.base = fmt::format("{:.1f}", serving.median_us);
  row.speedup = "1.00x";
  row.bar.speedup = 1.0;
  if (isolated.median_us > 0) {
    row.ibase = fmt::format("{:.1f}", isolated.median_us);
    row.bar.speedup_isolated = 1.0;
  }
  return row;
}

// A row operator's shape: its kernel record held to the gate, timed against the framework's kernel
// (the verdict names it); without one, or under a verdict, the framework's kernel alone. Row keys
// are exact: the record is the key's own.
BenchRow bench_row_shape(search::WorkerBackend& backend, const CacheReader& reader, const RowKey& key, int device) {
  const auto hit = reader.lookup(key.full_line());
  const Record* r = std::get_if<Record>(&hit);
  if (r == nullptr)
    return framework_row(key, device, fmt::format("the framework's kernel kept: no tuned kernel ({})",
                                                  to_string(std::get<LookupMiss>(hit))));
  if (r->kind == RecordKind::vendor)
    return framework_row(key, device,
                         r->candidate_us > 0
                             ? fmt::format("the framework's kernel kept: verdict, best candidate {:.1f} us vs {:.1f} us",
                                           r->candidate_us, r->baseline_us)
                             : std::string("the framework's kernel kept: verdict, no correct candidate"));
  const eval::Verdict v = evaluate(backend, *r);
  BenchRow row = tuned_row(v, *r, "");
  if (v.correct()) row.note += fmt::format(" (vs {})", baseline_of(OpKey(key), v));
  return row;
}

// What the chart's speedups are over, for a list of `gemms` GEMM and `rows` row-operator shapes.
std::string chart_baseline(std::size_t gemms, std::size_t rows) {
  if (rows == 0) return std::string(kVendorBaseline);
  return gemms == 0 ? "the framework kernel" : "the baseline";
}

int run_bench(const GpuArgs& a, const std::string& file, const std::string& chart) {
  // The list first: a bad line is named on any machine, with or without a GPU.
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "kdctl bench: cannot read %s\n", file.c_str());
    return kUsage;
  }
  ShapeTally tally;
  tally.add(in, file);
  for (const ShapeListError& e : tally.errors())
    std::fprintf(stderr, "kdctl bench: %s:%zu: %s\n", e.file.c_str(), e.line, e.message.c_str());
  if (!tally.errors().empty()) return kUsage;
  const auto dev = gpu_or_complain("bench", a.device);
  if (!dev) return kNoGpu;
  const std::filesystem::path dir = resolve_cache_dir(a.cache_dir);
  CacheReader reader(dir);
  reader.refresh();
  search::WorkerBackend backend(worker::default_worker_spawn(a.device, dir), std::chrono::seconds(a.watchdog_s));
  const DevicePart device{dev->arch, dev->name, dev->sms};
  // GEMM shapes in one table, row operators' (issue 33) in a second: their columns differ.
  std::vector<GemmKey> gemms;
  std::vector<RowKey> rows;
  for (const ShapeCount& s : tally.sorted()) {
    const auto parsed = parse_op_key(s.shape_line);  // the tally parsed every line
    const OpKey& op = std::get<OpKey>(parsed);
    if (const auto* row = std::get_if<RowKey>(&op)) rows.push_back(row->with_device(device));
    else gemms.push_back(std::get<GemmKey>(op).with_device(device));
  }
  std::vector<ChartBar> bars;
  if (!gemms.empty() || rows.empty())
    std::printf("%-8s %2s %2s %7s %5s %6s %5s | %9s %9s %8s %7s %7s | %9s %9s %8s | %6s  %s\n", "dtype", "ta", "tb",
                "m", "n", "k", "batch", "cuBLAS_us", "tuned_us", "speedup", "%strm_t", "%strm_c", "iso_cuBLAS",
                "iso_tuned", "iso_x", "%roof", "note");
  for (const GemmKey& shape : gemms) {
    for (auto& [key, row] : bench_shape(backend, reader, shape)) {
      // The input type, with the precision class where it is not the compute type's default (f32/tf32),
      // and both transposes and the batch: the four layouts of one size are four rows.
      std::string dtype(to_string(key.a));
      if (key.precision != default_precision(key.compute)) dtype += "/" + std::string(to_string(key.precision));
      const char* ta = key.ta == Transpose::T ? "T" : "N";
      const char* tb = key.tb == Transpose::T ? "T" : "N";
      row.bar.label = fmt::format("{} {}{} {}x{}x{}{}", dtype, ta, tb, key.m, key.n, key.k,
                                  key.batch > 1 ? fmt::format(" x{}", key.batch) : "");
      bars.push_back(row.bar);
      std::printf("%-8s %2s %2s %7lld %5lld %6lld %5lld | %9s %9s %8s %7s %7s | %9s %9s %8s | %6s  %s\n",
                  dtype.c_str(), ta, tb, static_cast<long long>(key.m), static_cast<long long>(key.n),
                  static_cast<long long>(key.k), static_cast<long long>(key.batch),
                  row.base.c_str(), row.tuned.c_str(), row.speedup.c_str(), row.st.c_str(), row.sc.c_str(),
                  row.ibase.c_str(), row.ituned.c_str(), row.ispeed.c_str(), row.roof.c_str(), row.note.c_str());
      std::fflush(stdout);
    }
  }
  if (!rows.empty()) {
    std::printf("%s%-9s %-5s %7s %8s | %9s %9s %8s %7s %7s | %9s %9s %8s | %6s  %s\n", gemms.empty() ? "" : "\n", "op",
                "dtype", "rows", "cols", "base_us", "tuned_us", "speedup", "%strm_t", "%strm_c", "iso_base",
                "iso_tuned", "iso_x", "%roof", "note");
    std::fflush(stdout);
  }
  for (const RowKey& key : rows) {
    BenchRow row = bench_row_shape(backend, reader, key, a.device);
    const std::string op(to_string(key.op)), dtype(to_string(key.dtype));
    row.bar.label = fmt::format("{} {} {}x{}", op, dtype, key.rows, key.cols);
    bars.push_back(row.bar);
    std::printf("%-9s %-5s %7lld %8lld | %9s %9s %8s %7s %7s | %9s %9s %8s | %6s  %s\n", op.c_str(), dtype.c_str(),
                static_cast<long long>(key.rows), static_cast<long long>(key.cols), row.base.c_str(),
                row.tuned.c_str(), row.speedup.c_str(), row.st.c_str(), row.sc.c_str(), row.ibase.c_str(),
                row.ituned.c_str(), row.ispeed.c_str(), row.roof.c_str(), row.note.c_str());
    std::fflush(stdout);
  }
  if (!rows.empty())
    std::printf("(base_us: the framework's kernel (PyTorch's, timed with python3), as the row gate times its "
                "baseline)\n");
  if (!chart.empty()) {
    const std::string baseline = chart_baseline(gemms.size(), rows.size());
    write_bar_chart(chart, bars,
                    fmt::format("kdctl bench {}: {} ({}, {} SMs)", std::filesystem::path(file).filename().string(),
                                dev->name, dev->arch, dev->sms),
                    baseline);
    std::printf("chart: %s (per shape: speedup over %s, serving and isolated; fraction of a streaming read's "
                "bandwidth, tuned and %s)\n",
                chart.c_str(), baseline.c_str(), baseline.c_str());
  }
  return kOk;
}

void gpu_flags(CLI::App& sub, GpuArgs& a) {
  add_cache_dir_flag(sub, a.cache_dir);
  sub.add_option("--device", a.device, "CUDA device ordinal")->capture_default_str();
  sub.add_option("--watchdog-seconds", a.watchdog_s, "Kill a kernel's worker after this long")->capture_default_str();
}

}  // namespace

void setup_verify(CLI::App& sub, std::function<int()>& action) {
  auto a = std::make_shared<GpuArgs>();
  auto dry = std::make_shared<bool>(false);
  gpu_flags(sub, *a);
  add_socket_flag(sub, a->socket);
  sub.add_flag("--dry-run", *dry, "Report failures without evicting");
  sub.footer("Every record of this GPU model is re-gated, GEMM and row-operator (rmsnorm, layernorm, softmax) ones:\n"
             "a GEMM's time against cuBLAS, a row operator's against the framework's kernel its verdict names\n"
             "(PyTorch's, timed with python3; the evaluator's f32 stand-in without torch). Verdicts (the baseline\n"
             "kept) have nothing to run and are listed.\n"
             "Exit codes: 0 all passed, 1 some failed (evicted unless --dry-run), 4 no GPU.");
  sub.callback([a, dry, &action] { action = [a, dry] { return run_verify(*a, *dry); }; });
}

void setup_bench(CLI::App& sub, std::function<int()>& action) {
  auto a = std::make_shared<GpuArgs>();
  auto file = std::make_shared<std::string>();
  auto chart = std::make_shared<std::string>("kdispatch-bench.png");
  sub.add_option("file", *file, "Shape list (as kdctl prewarm reads: GEMM and row-operator lines)")->required();
  gpu_flags(sub, *a);
  sub.add_option("--chart", *chart, "PNG chart to write (empty: none)")->capture_default_str();
  sub.footer(
      "Each tuned kernel is timed against the exact cuBLAS call in the sandboxed worker, in two regimes: serving "
      "(the ranking one: R back-to-back calls in one CUDA graph over rotating weight copies, per call) and "
      "isolated (one cold launch after an L2 flush). %strm_t / %strm_c: the bandwidth of a streaming read of the "
      "same inputs in the serving regime, reached by the tuned kernel / by cuBLAS. %roof: the roofline floor over "
      "the serving time.\n"
      "Token counts: an exact n is timed with the record that serves it, its own or else the narrowest range record "
      "covering n (note \"(range LO..HI)\"), at the grid the range's rule gives n. A range line n=LO..HI is timed at "
      "the range gate's timed n (its ends and middle), one row each, after its range record passed the gate at every n "
      "the range search checks; without a record, cuBLAS at those n.\n"
      "Row operators' lines (rmsnorm, layernorm, softmax) get a table of their own: a stored kernel is held to the "
      "gate and timed against the framework's kernel (PyTorch's, with python3, in both regimes; its name follows the "
      "note), base_us is that kernel's time; without a kernel record (or under a verdict) the framework's kernel is "
      "timed alone, or the note says why it could not be.\n"
      "Exit codes: 0 the table was printed, 2 a bad shape list (each bad line named FILE:LINE), 4 no GPU.");
  sub.callback([a, file, chart, &action] { action = [a, file, chart] { return run_bench(*a, *file, *chart); }; });
}

}  // namespace kd::kdctl
