// kdctl record FILE...: merges KD_RECORD files into one deduplicated shape list with call counts
// (formats in shape_list.hpp).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "key/n_buckets.hpp"
#include "kdctl.hpp"
#include "shape_list.hpp"

namespace kd::kdctl {
namespace {

enum class OnBadLine { fail, keep_going };

struct RecordArgs {
  std::vector<std::string> files;
  std::string output;  // empty: stdout
  bool keep_going = false;
  std::string buckets;  // empty: the daemon's `buckets` setting
};

// The buckets recorded n are merged into: --buckets, else the daemon's `buckets` setting as
// kdispatchd resolves it (KD_BUCKETS, its configuration file, the default).
std::variant<NBuckets, std::string> buckets_of(const RecordArgs& a) {
  daemon::CommandLine line;
  if (!a.buckets.empty()) line.flags["buckets"] = a.buckets;
  static constexpr std::string_view kKeys[] = {"buckets"};
  try {
    return daemon::load_shared_config(kKeys, line, daemon::process_environment).buckets;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

int run_record(const RecordArgs& a) {
  const OnBadLine on_bad = a.keep_going ? OnBadLine::keep_going : OnBadLine::fail;
  const auto buckets = buckets_of(a);
  if (const auto* bad = std::get_if<std::string>(&buckets)) {
    std::fprintf(stderr, "kdctl record: %s\n", bad->c_str());
    return kUsage;
  }
  const NBuckets& table = std::get<NBuckets>(buckets);
  ShapeTally tally(ExactInRange::merge);
  for (const std::string& file : a.files) {
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "kdctl record: cannot read %s\n", file.c_str());
      return kFailure;
    }
    tally.add(in, file);
  }
  for (const ShapeListError& e : tally.errors()) {
    std::fprintf(stderr, "kdctl record: %s:%zu: %s (line skipped)\n", e.file.c_str(), e.line,
                 e.message.c_str());
  }
  const std::string text = format_shape_list(tally.bucketed(table), a.files, table.spec());
  if (a.output.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream out(a.output, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::fprintf(stderr, "kdctl record: cannot write %s\n", a.output.c_str());
      return kFailure;
    }
  }
  if (!tally.errors().empty() && on_bad == OnBadLine::fail) {
    std::fprintf(stderr, "kdctl record: %zu bad line(s); pass --keep-going to accept the rest\n",
                 tally.errors().size());
    return kFailure;
  }
  return kOk;
}

}  // namespace

void setup_record(CLI::App& sub, std::function<int()>& action) {
  const auto a = command_args(sub, action, run_record);
  sub.add_option("files", a->files, "KD_RECORD files (or shape lists) to merge")->required();
  sub.add_option("-o,--output", a->output, "Write the merged list here instead of stdout");
  sub.add_flag("--keep-going", a->keep_going,
               "Exit 0 although some lines did not parse (they are still reported and skipped)");
  sub.add_option("--buckets", a->buckets,
                 "Merge recorded n into these buckets: default, vllm, off or a list of edges (default: the "
                 "daemon's `buckets` setting)");
  sub.footer(
      "Input: one key per line (shape line, full key or linear shorthand; n may be a range n=LO..HI); '#'\n"
      "comments; an optional count as a trailing '# calls=N' / '# count=N' or a '# calls=N' line before the\n"
      "key. Output: a prewarm list sorted by calls, each shape after its '# calls=N' line, every recorded n\n"
      "merged into a range the inputs give that holds it, else into its bucket (n=33..64 for n=40 with the\n"
      "default buckets); --buckets off keeps every n. A range that shares an n with another range of an\n"
      "otherwise equal key is a bad line (FILE:LINE names both). Row operators' lines (rmsnorm, layernorm,\n"
      "softmax rows= cols=) merge by count and stay exact: no buckets.\n"
      "Exit codes: 0 ok, 1 unreadable input or bad lines (without --keep-going), 2 usage (a bad --buckets).\n");
}

}  // namespace kd::kdctl
