// kd_kernel_dump: renders and compiles every configuration of the builtin families that matters
// (each seed of each key in tools/shapes/llama3-8b.txt, as the family gives it and as the builtin
// proposer seeds it with KD_PDL = 1; every idea move applied to those seeds; every variant of the
// kernel-lab configs tools/dev/lab_*.json whose entry belongs to the family) and writes, per
// distinct configuration, the cubin, the PTX, NVRTC's log with ptxas -v and the rendered source,
// plus index.tsv: one row per (origin, key, parameters) with its configuration id and launch plan.
// A developer tool, no GPU needed: tools/dev/kernel_equivalence.py compares two such dumps.
//
// usage: kd_kernel_dump --out DIR [--source-dir DIR] [--families wg_tiled,wg_tma] [--jobs N]
//                       [--only SUBSTRING] [--ids FILE] [--list]
//        kd_kernel_dump --lab FAMILY 'gemm ...' [PARAMS ...]
// --only keeps the configurations whose id or parameters contain SUBSTRING, --ids those whose id is
// listed in FILE (whitespace-separated), --list only counts them.
// --lab prints a kernel-lab case (tools/dev/kernel_lab.py) for one key of packed operands (a strided batch's
// entries one after another): one variant per
// PARAMS ("KD_COPY_ROWS=32 KD_PDL=1": the family's first seed with those changed, completed and checked by
// its rules), or the family's seeds with none, each with the launch plan, workspace and PDL flags the
// family gives it.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "builtin/family.hpp"
#include "builtin/ideas.hpp"
#include "builtin/lab_case.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "key/gemm_key.hpp"
#include "plan/launch_plan.hpp"

namespace fs = std::filesystem;
using kd::GemmKey;
using kd::builtin::Family;
using kd::builtin::Params;
using kd::builtin::Target;

namespace {

struct Options {
  std::vector<std::string> lab;  // --lab FAMILY KEY [PARAMS ...]
  fs::path out;
  fs::path source_dir = ".";
  std::vector<std::string> families = {"wg_tiled", "wg_tma"};
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  std::string only;
  std::set<std::string> ids;  // with --ids FILE: only these configuration ids
  bool list = false;
};

// One row of index.tsv: where the configuration came from and what it renders to.
struct Row {
  std::string origin, family, key, params, id, plan;
};

// A configuration's identity across revisions: the family and its #define block (types from the
// key, then the parameters), which is what the kernel text is compiled with. FNV-1a, 64 bits.
std::string config_id(const Family& f, const std::string& rendered) {
  const std::size_t first = rendered.find("#define");
  const std::size_t body = rendered.size() - f.source.size();  // render() appends the source last
  const std::string defines = std::string(f.name) + "\n" + rendered.substr(first, body - first);
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : defines) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{}-{:016x}", f.name, h);
}

// The key on `line`, or an error that names `where` and what parse_key found wrong with it.
GemmKey parse_gemm_key(std::string_view line, const std::string& where) {
  auto parsed = kd::parse_key(line);
  if (const auto* err = std::get_if<kd::KeyError>(&parsed)) throw std::runtime_error(where + ": " + err->message);
  return std::get<GemmKey>(std::move(parsed));
}

std::vector<GemmKey> shape_keys(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::vector<GemmKey> keys;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.rfind("gemm", 0) == 0) keys.push_back(parse_gemm_key(line, fmt::format("{}:{}", file.string(), n)));
  }
  return keys;
}

class Collector {
public:
  Collector(const Options& o) : opts_(o) {}

  void add(const std::string& origin, const Family& f, const GemmKey& key, const Params& p) {
    std::string src = kd::builtin::render(f, key, target_, p);
    const std::string id = config_id(f, src);
    if (!opts_.only.empty() && id.find(opts_.only) == std::string::npos &&
        kd::builtin::describe(p).find(opts_.only) == std::string::npos)
      return;
    if (!opts_.ids.empty() && !opts_.ids.contains(id)) return;
    rows_.push_back({origin, std::string(f.name), key.shape_line(), kd::builtin::describe(p), id,
                     kd::plan_to_json(kd::builtin::rendered_plan(f, key, target_, p))});
    if (sources_.emplace(id, src).second) order_.push_back(id);
  }

  void seeds_and_ideas(const Family& f, const std::vector<GemmKey>& keys) {
    for (const GemmKey& key : keys) {
      if (f.rejects(key)) continue;
      for (const Params& raw : f.seeds(key, target_)) {
        const Params seed = f.complete(key, target_, raw);
        if (!f.valid(key, target_, seed)) continue;
        add("seed", f, key, seed);
        Params pdl = seed;
        if (f.pdl_first && !pdl.contains("KD_PDL")) pdl["KD_PDL"] = 1;  // as BuiltinProposer::seeds
        add("seed+pdl", f, key, pdl);
        for (const kd::builtin::IdeaMove& m : kd::builtin::idea_catalogue())
          if (const auto moved = kd::builtin::apply_idea(m, f, key, target_, pdl))
            add(std::string("idea:") + std::string(m.id), f, key, *moved);
      }
    }
  }

  // Every lab config (tools/dev/lab_*.json) case whose entry is the family's, with its key (lab_case.hpp,
  // as the unit tests take it) and the variant's parameters as written.
  void lab_configs(const Family& f, const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("lab_", 0) == 0 && e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::ifstream in(file);
      const nlohmann::json cfg = nlohmann::json::parse(in);
      for (const auto& c : cfg.at("cases")) {
        if (c.value("entry", "") != f.entry) continue;
        const GemmKey key = kd::builtin::lab_case_key(c);
        for (const auto& v : c.at("variants")) {
          Params p;
          for (const auto& [name, value] : v.items())
            if (name.rfind("KD_", 0) == 0 && value.is_number_integer()) p[name] = value.get<long long>();
          add("lab:" + file.filename().string(), f, key, p);
        }
      }
    }
  }

  void write_index() const {
    std::ofstream idx(opts_.out / "index.tsv");
    idx << "origin\tfamily\tkey\tparams\tid\tplan\n";
    for (const Row& r : rows_) idx << r.origin << '\t' << r.family << '\t' << r.key << '\t' << r.params << '\t' << r.id << '\t' << r.plan << '\n';
  }

  // Compiles every distinct configuration on `jobs` threads; returns how many failed to compile.
  int compile_all() const {
    std::atomic<std::size_t> next{0};
    std::atomic<int> failed{0}, done{0};
    std::mutex io;
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < std::min<std::size_t>(opts_.jobs, order_.size()); ++w)
      pool.emplace_back([&] {
        for (std::size_t i; (i = next++) < order_.size();) {
          const std::string& id = order_[i];
          kd::search::CompileRequest req;
          req.source = sources_.at(id);
          req.extra_options = {"--ptxas-options=-v"};
          kd::search::CompileOutput out;
          try {
            out = kd::search::compile_cuda(req);
          } catch (const std::exception& e) {
            out.log = e.what();
          }
          write(id + ".cu", req.source);
          write(id + ".log", out.log);
          if (out.status == kd::search::CompileStatus::ok) {
            write(id + ".cubin", out.cubin);
            write(id + ".ptx", out.ptx);
          } else {
            ++failed;
          }
          const std::lock_guard<std::mutex> lock(io);
          std::cerr << fmt::format("[{}/{}] {} {}\n", ++done, order_.size(), id,
                                   out.status == kd::search::CompileStatus::ok ? "ok" : "COMPILE ERROR");
        }
      });
    for (std::thread& t : pool) t.join();
    return failed;
  }

  std::size_t distinct() const { return order_.size(); }
  std::size_t rows() const { return rows_.size(); }

private:
  void write(const std::string& name, const std::string& data) const {
    std::ofstream f(opts_.out / name, std::ios::binary);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
  }

  const Options& opts_;
  Target target_;  // sm_90, 132 SMs, 227 KiB: the default Target the unit tests use
  std::vector<Row> rows_;
  std::map<std::string, std::string> sources_;
  std::vector<std::string> order_;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--lab") {
      for (++i; i < argc; ++i) o.lab.push_back(argv[i]);
      if (o.lab.size() < 2) throw std::runtime_error("--lab FAMILY 'gemm ...' [PARAMS ...]");
      return o;
    }
    if (a == "--out") o.out = value();
    else if (a == "--source-dir") o.source_dir = value();
    else if (a == "--jobs") o.jobs = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--only") o.only = value();
    else if (a == "--list") o.list = true;
    else if (a == "--ids") {
      std::ifstream in(value());
      for (std::string id; in >> id;) o.ids.insert(id);
    }
    else if (a == "--families") {
      o.families.clear();
      std::stringstream in(value());
      for (std::string f; std::getline(in, f, ',');) o.families.push_back(f);
    } else throw std::runtime_error("unknown option " + a + " (see the comment at the top of tools/dev/kernel_dump.cpp)");
  }
  if (o.out.empty() && !o.list) throw std::runtime_error("--out DIR is required");
  return o;
}

// "KD_BN=64 KD_COPY_ROWS=8" as parameters.
Params parse_params(const std::string& text) {
  Params p;
  std::stringstream in(text);
  for (std::string kv; in >> kv;) {
    const std::size_t eq = kv.find('=');
    if (eq == std::string::npos || kv.rfind("KD_", 0) != 0) throw std::runtime_error("not a KD_NAME=VALUE: " + kv);
    p[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
  }
  return p;
}

const char* c_type(kd::DType t) {
  switch (t) {
    case kd::DType::f32: return "float";
    case kd::DType::bf16: return "__nv_bfloat16";
    case kd::DType::f16: return "__half";
    default: throw std::runtime_error("the kernel lab takes f32, bf16 and f16 operands");
  }
}

// One kernel-lab case (the shape of tools/dev/lab_*.json's, which the unit tests' check_lab_config
// checks against the rules) for `args`: FAMILY, a key line, then parameter sets.
nlohmann::json lab_case(const std::vector<std::string>& args) {
  const Family* f = kd::builtin::find_family(args[0]);
  if (f == nullptr) throw std::runtime_error("no builtin family " + args[0]);
  const GemmKey key = parse_gemm_key(args[1], "the key");
  const bool ta = key.ta == kd::Transpose::T, tb = key.tb == kd::Transpose::T;
  if (auto why = kd::builtin::lab_refuses(key)) throw std::runtime_error(*why);
  if (auto why = f->rejects(key)) throw std::runtime_error(args[0] + " rejects the key: " + *why);
  const Target t;
  const std::vector<Params> seeds = f->seeds(key, t);
  std::vector<Params> sets;
  for (std::size_t i = 2; i < args.size(); ++i) {
    if (seeds.empty()) throw std::runtime_error(args[0] + " has no seed for the key");
    Params p = f->complete(key, t, seeds.front());  // the first seed, with these parameters changed
    for (const auto& [name, value] : parse_params(args[i])) p[name] = value;
    sets.push_back(p);
  }
  if (sets.empty()) sets = seeds;
  nlohmann::json c = {{"dtype", std::string(kd::to_string(key.a))},
                      {"m", key.m},
                      {"n", key.n},
                      {"k", key.k},
                      {"ta", ta ? "T" : "N"},
                      {"tb", tb ? "T" : "N"},
                      {"entry", f->entry},
                      {"arch", t.arch == "sm_90" ? "sm_90a" : t.arch},
                      {"defines",
                       {{"KD_A_T", c_type(key.a)},
                        {"KD_B_T", c_type(key.b)},
                        {"KD_C_T", c_type(key.c)},
                        {"KD_TA", ta ? 1 : 0},
                        {"KD_TB", tb ? 1 : 0},
                        {"KD_BETA_ZERO", key.beta_zero ? 1 : 0},
                        {"KD_BIAS", key.epilogue == kd::Epilogue::bias ? 1 : 0}}},
                      {"variants", nlohmann::json::array()}};
  if (key.precision == kd::PrecisionClass::tf32) c["tf32"] = true;
  if (key.batch > 1) c["batch"] = key.batch;
  for (const Params& raw : sets) {
    const Params p = f->complete(key, t, raw);
    if (!f->valid(key, t, p)) throw std::runtime_error("not a valid configuration: " + kd::builtin::describe(p));
    const kd::LaunchPlan plan = f->plan(key, t, p);
    nlohmann::json v = nlohmann::json::object();
    for (const auto& [name, value] : p) v[name] = value;
    nlohmann::json launches = nlohmann::json::array();
    for (const kd::LaunchSpec& l : plan.launches) {
      nlohmann::json j = {{"entry", l.entry}, {"grid", l.grid}, {"block", l.block}, {"smem", l.smem_bytes}};
      if (l.pdl) j["pdl"] = true;
      launches.push_back(j);
    }
    v["launches"] = launches;
    v["workspace"] = plan.workspace_bytes;
    if (f->pdl_first && p.contains("KD_PDL") && p.at("KD_PDL") == 1) v["pdl_first"] = true;
    c["variants"].push_back(v);
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options opts = parse(argc, argv);
    if (!opts.lab.empty()) {
      std::cout << nlohmann::json{{"cases", {lab_case(opts.lab)}}}.dump() << "\n";
      return 0;
    }
    Collector all(opts);
    const std::vector<GemmKey> keys = shape_keys(opts.source_dir / "tools/shapes/llama3-8b.txt");
    for (const std::string& name : opts.families) {
      const Family* f = kd::builtin::find_family(name);
      if (f == nullptr) throw std::runtime_error("no builtin family " + name);
      all.seeds_and_ideas(*f, keys);
      all.lab_configs(*f, opts.source_dir / "tools/dev");
    }
    std::cerr << fmt::format("{} configurations, {} distinct\n", all.rows(), all.distinct());
    if (opts.list) return 0;
    fs::create_directories(opts.out);
    all.write_index();
    const int failed = all.compile_all();
    if (failed) std::cerr << failed << " configurations did not compile\n";
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "kd_kernel_dump: " << e.what() << "\n";
    return 2;
  }
}
