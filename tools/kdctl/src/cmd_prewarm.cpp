// kdctl prewarm FILE: queue a shape list on the daemon, follow the searches, print the table.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "ctl_client/ctl_client.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "daemon_link.hpp"
#include "cuda/device.hpp"
#include "cuda/driver.hpp"
#include "kdctl.hpp"
#include "key/gemm_key.hpp"
#include "key/row_key.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "shape_list.hpp"
#include "store/cache_store.hpp"

namespace kd::kdctl {
namespace {


struct PrewarmArgs : DaemonArgs {
  std::string file;
  std::string proposer;
  std::uint64_t rounds = 0, candidates = 0, wall_s = 0;  // 0: the daemon's default
  int timeout_s = 0;  // 0: wait until every shape is settled
  std::size_t batch = 0;  // shapes per request; 0: kDefaultBatchShapes
  bool no_wait = false;
};

// A shape list goes to the daemon in requests of at most this many shapes and kBatchPayloadBytes
// of JSON (a quarter of the frame limit), each acknowledged after its commit, so that any list
// fits the protocol and a daemon that dies mid-way keeps every batch it acknowledged.
constexpr std::size_t kDefaultBatchShapes = 1000;
constexpr std::size_t kBatchPayloadBytes = protocol::kMaxFramePayloadBytes / 4;
// The daemon answers `jobs` for at most 500 keys per request (PROTOCOL.md).
constexpr std::size_t kJobsPerRequest = 500;

struct ShapeState {
  std::string state = "queued";
  std::string detail;
};

// A shape whose key has no job after the daemon acknowledged it: refused by the bound on queued
// jobs, displaced by a job of higher priority, or (finished) purged. Settled: nothing will search it.
constexpr std::string_view kNotQueued = "not queued";
constexpr std::string_view kNotQueuedDetail =
    "no job: the daemon's queue is full (max_queued_jobs) or dropped it for one of higher priority";

bool settled(const std::string& state) {
  return state == "done" || state == "failed" || state == "cancelled" || state == kNotQueued;
}

// The request of one batch: shapes [begin, end) with the flags' proposer and budgets.
protocol::Prewarm prewarm_request(const PrewarmArgs& a, const std::vector<std::string>& shapes, std::size_t begin,
                                  std::size_t end) {
  return {{shapes.begin() + static_cast<std::ptrdiff_t>(begin), shapes.begin() + static_cast<std::ptrdiff_t>(end)},
          a.proposer,
          {a.rounds, a.candidates, a.wall_s, 0}};
}

// One past the last shape of the batch that starts at `begin`: at most `max_shapes` shapes and
// kBatchPayloadBytes of key text (JSON adds 3 bytes per key; keys are at most 502 bytes).
std::size_t batch_end(const std::vector<std::string>& shapes, std::size_t begin, std::size_t max_shapes) {
  std::size_t bytes = 0, end = begin;
  while (end < shapes.size() && end - begin < max_shapes) {
    bytes += shapes[end].size() + 3;
    if (bytes > kBatchPayloadBytes && end > begin) break;
    ++end;
  }
  return end;
}

// A key's n as the table prints it: "16", or a range "33..64" (issue 29).
std::string n_text(const GemmKey& key) {
  return key.is_range() ? fmt::format("{}..{}", key.n, key.n_hi) : std::to_string(key.n);
}

// A shape line's columns as the table and the progress lines print them: a GEMM's op, A type, m, n
// and k; a row operator's (issue 33) op, dtype, rows as m and cols as n, no k. `line` is one the
// shape list read (it parses).
struct ShapeColumns {
  std::string op, dtype, m, n, k;
  std::string baseline;  // what a job that found no faster kernel kept
  std::string short_form() const { return op != "gemm" ? fmt::format("{} {} {}x{}", op, dtype, m, n)
                                                       : fmt::format("{} {}x{}x{}", dtype, m, n, k); }
};
ShapeColumns columns_of(const std::string& line) {
  const auto parsed = parse_op_key(line);
  const OpKey& op = std::get<OpKey>(parsed);
  if (const auto* row = std::get_if<RowKey>(&op))
    return {std::string(to_string(row->op)), std::string(to_string(row->dtype)), std::to_string(row->rows),
            std::to_string(row->cols), "-", "the framework's kernel"};
  const GemmKey& key = std::get<GemmKey>(op);
  return {"gemm", std::string(to_string(key.a)), std::to_string(key.m), n_text(key), std::to_string(key.k), "cuBLAS"};
}

void print_table(const std::vector<std::string>& shapes, const std::map<std::string, ShapeState>& st,
                 const std::filesystem::path& cache_dir) {
  std::optional<DevicePart> device;
  if (const auto devs = list_devices(); !devs.empty()) device = DevicePart{devs[0].arch, devs[0].name, devs[0].sms};
  CacheReader reader(cache_dir);
  reader.refresh();
  // The baseline column is cuBLAS's time; with row operators in the list (issue 33) it holds theirs,
  // the framework's kernel's, too, and says so.
  const bool rows = std::any_of(shapes.begin(), shapes.end(), [](const std::string& line) {
    const auto parsed = parse_op_key(line);
    return std::holds_alternative<RowKey>(std::get<OpKey>(parsed));
  });
  std::printf("\n%-9s %-5s %7s %11s %6s  %10s %9s %8s  %s\n", "op", "dtype", "m", "n", "k",
              rows ? "base_us" : "cuBLAS_us", "tuned_us", "speedup", "outcome");
  for (const std::string& line : shapes) {
    const ShapeColumns col = columns_of(line);
    const ShapeState s = st.count(line) ? st.at(line) : ShapeState{};
    std::string cublas = "-", tuned = "-", speedup = "-", outcome = s.state;
    if (device) {
      const auto parsed = parse_op_key(line);
      const auto hit = reader.lookup_covering(
          std::visit([&](const auto& key) { return key.with_device(*device).full_line(); }, std::get<OpKey>(parsed)));
      const Record* r = std::get_if<Record>(&hit);
      if (r != nullptr && r->kind == RecordKind::vendor) {  // a vendor verdict: outcome as the job says
        cublas = fmt::format("{:.1f}", r->baseline_us);
        if (r->candidate_us > 0) tuned = fmt::format("{:.1f}", r->candidate_us);
      } else if (r != nullptr) {
        cublas = fmt::format("{:.1f}", r->baseline_us);
        tuned = fmt::format("{:.1f}", r->candidate_us);
        speedup = fmt::format("{:.2f}x", r->baseline_us / r->candidate_us);
        outcome = "published (" + r->proposer + ")";
      }
    }
    if (outcome != s.state) {
    } else if (s.state == "done") {
      outcome = "kept " + col.baseline + ": " + s.detail;
    } else if (!s.detail.empty()) {
      outcome += ": " + s.detail;
    }
    std::printf("%-9s %-5s %7s %11s %6s  %10s %9s %8s  %s\n", col.op.c_str(), col.dtype.c_str(), col.m.c_str(),
                col.n.c_str(), col.k.c_str(), cublas.c_str(), tuned.c_str(), speedup.c_str(), outcome.c_str());
  }
  if (rows)
    std::printf("(base_us: cuBLAS's time for a gemm, the framework's kernel's for a row operator, whose m and n are "
                "its rows and cols)\n");
}

// Queues every shape in batches; prints progress on stderr when there is more than one batch.
// Returns kOk, or the exit code after saying what failed (how many shapes were queued by then).
// A shape the daemon acknowledges without queuing it (the bound on queued jobs) is not counted as
// queued; each batch's reply names at most 16 of them.
int queue_shapes(const PrewarmArgs& a, const std::filesystem::path& socket, const std::vector<std::string>& shapes) {
  std::optional<daemon::Client> client;
  try {
    client.emplace(socket);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kdctl prewarm: daemon at %s not reachable: %s\n", socket.c_str(), e.what());
    return kFailure;
  }
  const std::size_t max_shapes = a.batch > 0 ? a.batch : kDefaultBatchShapes;
  const bool several_batches = batch_end(shapes, 0, max_shapes) < shapes.size();
  std::size_t queued = 0, not_queued = 0;
  for (std::size_t begin = 0; begin < shapes.size();) {
    const std::size_t end = batch_end(shapes, begin, max_shapes);
    daemon::Answer<protocol::PrewarmOk> answer;
    try {
      answer = client->call(prewarm_request(a, shapes, begin, end));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kdctl prewarm: daemon at %s not reachable after %zu of %zu shapes were queued (those "
                           "stay queued): %s\n",
                   socket.c_str(), queued, shapes.size(), e.what());
      return kFailure;
    }
    if (const auto* refused = std::get_if<protocol::ErrorMessage>(&answer)) {
      std::fprintf(stderr, "kdctl prewarm: daemon refused%s: %s\n",
                   queued > 0 ? fmt::format(" after {} of {} shapes were queued", queued, shapes.size()).c_str() : "",
                   refused->message.c_str());
      return kFailure;
    }
    const auto& reply = std::get<protocol::PrewarmOk>(answer);
    for (const protocol::RejectedKey& r : reply.rejected)
      std::fprintf(stderr, "kdctl prewarm: the daemon rejected %s: %s\n", r.key.c_str(), r.message.c_str());
    const std::size_t sent = end - begin;
    const std::size_t taken = std::min<std::size_t>(reply.queued, sent);
    queued += taken;
    not_queued += sent - taken;
    begin = end;
    if (several_batches) std::fprintf(stderr, "kdctl prewarm: queued %zu/%zu\n", queued + not_queued, shapes.size());
  }
  if (not_queued == 0)
    std::printf("queued %zu shapes on %s\n", shapes.size(), socket.c_str());
  else
    std::printf("queued %zu of %zu shapes on %s\n", queued, shapes.size(), socket.c_str());
  std::fflush(stdout);
  return kOk;
}

// Says how many of `states` have no job (kNotQueued); kOk when none, else kFailure.
int report_not_queued(const std::map<std::string, ShapeState>& states) {
  const auto n = static_cast<std::size_t>(
      std::count_if(states.begin(), states.end(), [](const auto& s) { return s.second.state == kNotQueued; }));
  if (n == 0) return kOk;
  std::fprintf(stderr, "kdctl prewarm: %zu shape(s) have no job, so nothing searches them: the daemon's queue is "
                       "full (max_queued_jobs) and it refused them or gave their place to shapes of higher "
                       "priority; raise max_queued_jobs or prewarm them later\n",
               n);
  return kFailure;
}

// The jobs of `shapes` (`jobs` requests of kJobsPerRequest keys), by key.
std::map<std::string, ShapeState> job_states(daemon::Client& client, const std::vector<std::string>& shapes) {
  std::map<std::string, ShapeState> states;
  for (std::size_t begin = 0; begin < shapes.size(); begin += kJobsPerRequest) {
    const std::size_t end = std::min(shapes.size(), begin + kJobsPerRequest);
    const protocol::JobsReply reply = daemon::reply_or_throw(client.call(protocol::JobsQuery{
        {shapes.begin() + static_cast<std::ptrdiff_t>(begin), shapes.begin() + static_cast<std::ptrdiff_t>(end)}}));
    for (const protocol::JobEntry& j : reply.jobs) {
      if (j.state == "unknown")
        states[j.key] = {std::string(kNotQueued), std::string(kNotQueuedDetail)};
      else
        states[j.key] = {j.state, (j.state == "running" ? j.progress : j.reason).value_or("")};
    }
  }
  return states;
}

int run_prewarm(const PrewarmArgs& a) {
  std::ifstream in(a.file);
  if (!in) {
    std::fprintf(stderr, "kdctl prewarm: cannot read %s\n", a.file.c_str());
    return kFailure;
  }
  ShapeTally tally;
  tally.add(in, a.file);
  for (const ShapeListError& e : tally.errors())
    std::fprintf(stderr, "kdctl prewarm: %s:%zu: %s\n", e.file.c_str(), e.line, e.message.c_str());
  if (!tally.errors().empty()) return kUsage;
  std::vector<std::string> shapes;
  for (const ShapeCount& s : tally.sorted()) shapes.push_back(s.shape_line);
  if (shapes.empty()) {
    std::fprintf(stderr, "kdctl prewarm: %s holds no shapes\n", a.file.c_str());
    return kUsage;
  }

  const std::filesystem::path socket = socket_of(a);
  if (const int rc = queue_shapes(a, socket, shapes); rc != kOk) return rc;
  if (a.no_wait) {
    // One look at the jobs: a shape acknowledged as queued may have lost its place to a later shape
    // of higher priority (max_queued_jobs).
    try {
      daemon::Client client(socket);
      return report_not_queued(job_states(client, shapes));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kdctl prewarm: lost the daemon after queuing: %s\n", e.what());
      return kFailure;
    }
  }

  // Follow: poll the shapes' jobs and print each change of a shape's state.
  std::map<std::string, ShapeState> states;
  const auto start = std::chrono::steady_clock::now();
  std::string cache_dir = a.cache_dir;
  for (;;) {
    std::map<std::string, ShapeState> now;
    try {
      daemon::Client client(socket);
      const protocol::Status status = daemon::reply_or_throw(client.call(protocol::StatusQuery{}));
      if (cache_dir.empty()) cache_dir = status.cache_dir;
      if (!status.search_backend.available) {
        std::fprintf(stderr, "kdctl prewarm: the daemon cannot search: %s\n", status.search_backend.message.c_str());
        return kNoGpu;
      }
      now = job_states(client, shapes);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kdctl prewarm: lost the daemon: %s\n", e.what());
      return kFailure;
    }
    std::size_t done = 0;
    for (const std::string& key : shapes) {
      const auto it = now.find(key);
      if (it == now.end()) continue;
      const ShapeState& s = it->second;
      ShapeState& before = states[key];
      if (s.state != before.state || s.detail != before.detail) {
        std::printf("[%5.0fs] %s: %s%s%s\n",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    columns_of(key).short_form().c_str(), s.state.c_str(), s.detail.empty() ? "" : ": ",
                    s.detail.c_str());
        std::fflush(stdout);
        before = s;
      }
      if (settled(s.state)) ++done;
    }
    if (done == shapes.size()) break;
    if (a.timeout_s > 0 && std::chrono::steady_clock::now() - start > std::chrono::seconds(a.timeout_s)) {
      std::fprintf(stderr, "kdctl prewarm: timeout after %d s; the daemon keeps working on the rest\n", a.timeout_s);
      print_table(shapes, states, cache_dir);
      return kFailure;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  print_table(shapes, states, cache_dir);
  return report_not_queued(states);
}

}  // namespace

void setup_prewarm(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_prewarm);
  sub.add_option("file", a->file,
                 "Shape list: canonical key lines (gemm, or rmsnorm/layernorm/softmax rows= cols=) or `linear` shorthand, # "
                 "comments; a GEMM's n may be a range n=LO..HI")
      ->required();
  add_daemon_flags(sub, *a);
  sub.add_option("--proposer", a->proposer, "Proposer for these jobs (default: the daemon's)");
  sub.add_option("--rounds", a->rounds, "Search rounds per shape (default: the daemon's)");
  sub.add_option("--max-candidates", a->candidates, "Candidates per shape (default: the daemon's)");
  sub.add_option("--wall-seconds", a->wall_s, "Search wall time per shape (default: the daemon's)");
  sub.add_option("--timeout", a->timeout_s, "Stop following after this many seconds (0: until all settle)");
  sub.add_option("--batch", a->batch,
                 "Shapes per request (default 1000; a request also stays within 256 KiB); progress goes to stderr");
  sub.add_flag("--no-wait", a->no_wait, "Queue and return without following");
  sub.footer("Shapes are queued in batches, each committed by the daemon before the next is sent: a daemon that\n"
             "stops mid-way keeps every batch it acknowledged (\"queued N/M\" on stderr).\n"
             "A shape left without a job (the daemon's queue is full, max_queued_jobs: it refused the shape or gave its\n"
             "place to one of higher priority) is listed as \"not queued\".\n"
             "A range n=LO..HI is searched as one job whose kernel serves every n of it (kdctl show prints where it\n"
             "was checked); a range that shares an n with another shape of an otherwise equal key is a bad line.\n"
             "Exit codes: 0 every shape settled (or queued, with --no-wait), 1 no daemon, the daemon refused a "
             "request, some shapes have no job, or --timeout passed, 2 unreadable shape lines (named file:line, also\n"
             "inverted, open or overlapping ranges) or no shapes, 4 the daemon has no "
             "GPU to search with (the shapes stay queued).");
}

}  // namespace kd::kdctl
