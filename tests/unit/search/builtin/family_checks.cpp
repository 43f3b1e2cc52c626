#include "family_checks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "builtin/lab_case.hpp"
#include "compile/nvrtc_compiler.hpp"
#include "plan/launch_plan.hpp"

namespace kd::builtin::test {

std::string source_dir() {
  const char* root = std::getenv("KD_SOURCE_DIR");
  return root ? root : ".";
}

std::vector<GemmKey> llama_keys() {
  std::ifstream in(source_dir() + "/tools/shapes/llama3-8b.txt");
  std::vector<GemmKey> keys;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("gemm", 0) == 0) keys.push_back(std::get<GemmKey>(parse_key(line)));
  return keys;
}

GemmKey key_of(const std::string& line) { return std::get<GemmKey>(parse_key(line)); }

std::vector<Params> completed_seeds(const Family& f, const GemmKey& key, const Target& t) {
  std::vector<Params> out;
  for (const Params& raw : f.seeds(key, t)) out.push_back(f.complete(key, t, raw));
  return out;
}

std::vector<Params> completed_seeds_with(const Family& f, const GemmKey& key, const Target& t, const char* name) {
  std::vector<Params> out;
  for (const Params& p : completed_seeds(f, key, t))
    if (const auto it = p.find(name); it != p.end() && it->second != 0) out.push_back(p);
  return out;
}

IdeaSweep sweep_ideas(const Family& f, std::span<const IdeaMove> moves) {
  const Target t;
  IdeaSweep sweep;
  for (const GemmKey& key : llama_keys()) {
    if (not_searched_for(f, key)) continue;
    for (const Params& p : completed_seeds(f, key, t)) {
      std::set<Params> seen{p};
      for (const IdeaMove& m : moves) {
        EXPECT_EQ(m.family, f.name);
        const auto moved = apply_idea(m, f, key, t, p);
        if (!moved) continue;
        ++sweep.applied;
        sweep.ids.insert(std::string(m.id));
        EXPECT_TRUE(f.valid(key, t, *moved)) << m.id;
        EXPECT_TRUE(seen.insert(*moved).second) << m.id << " repeats a configuration: " << describe(*moved);
        EXPECT_FALSE(m.text(key, t, p).empty());
      }
    }
  }
  return sweep;
}

void DistinctSources::add(const GemmKey& key, const Params& p) {
  std::string src = render(family_, key, target_, p);
  if (bodies_.insert(src.substr(src.find("#define"))).second) sources_.push_back(std::move(src));
}

std::vector<std::string> seeds_and_first_steps(const Family& f, const Target& t, std::span<const IdeaMove> ideas,
                                               const std::vector<std::string>& extra,
                                               const std::function<bool(const GemmKey&)>& stepped) {
  DistinctSources distinct(f, t);
  std::vector<GemmKey> keys = llama_keys();
  for (const std::string& line : extra) keys.push_back(key_of(line));
  for (const GemmKey& key : keys) {
    if (not_searched_for(f, key)) continue;
    const auto seeds = completed_seeds(f, key, t);
    for (const Params& p : seeds) distinct.add(key, p);
    if (!stepped(key)) continue;
    for (const IdeaMove& m : ideas)
      if (const auto moved = apply_idea(m, f, key, t, seeds.front())) distinct.add(key, *moved);
  }
  return distinct.sources();
}

void expect_nvrtc_clean(const std::vector<std::string>& sources, bool no_wgmma_serialization) {
  // Compiled on every core (NVRTC programs are independent), checked here in order.
  std::vector<search::CompileOutput> outs(sources.size());
  std::atomic<std::size_t> next{0};
  const unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), sources.size()));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < sources.size();) {
        search::CompileRequest req;
        req.source = sources[i];
        req.extra_options = {"--ptxas-options=-v"};
        try {
          outs[i] = search::compile_cuda(req);
        } catch (const std::exception& e) {
          outs[i].log = e.what();  // status stays compile_error
        }
      }
    });
  for (std::thread& t : pool) t.join();
  const std::regex spill("([1-9][0-9]*) bytes spill stores");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const search::CompileOutput& out = outs[i];
    const std::string head = sources[i].substr(0, sources[i].find('\n'));
    ASSERT_EQ(out.status, search::CompileStatus::ok) << head << "\n" << out.log;
    EXPECT_FALSE(std::regex_search(out.log, spill)) << head << "\n" << out.log;
    if (no_wgmma_serialization) {
      EXPECT_EQ(out.log.find("serialized"), std::string::npos) << head << "\n" << out.log;
    }
  }
}

void check_lab_config(const std::string& file, const Family& f, int& variants) {
  std::ifstream in(source_dir() + "/tools/dev/" + file);
  ASSERT_TRUE(in.good()) << file;
  const nlohmann::json cfg = nlohmann::json::parse(in);
  const Target t;
  for (const auto& c : cfg.at("cases")) {
    const GemmKey key = lab_case_key(c);
    ASSERT_FALSE(f.rejects(key));
    for (const auto& v : c.at("variants")) {
      ++variants;
      Params p;
      for (const auto& [name, value] : v.items())
        if (name.rfind("KD_", 0) == 0 && value.is_number_integer()) p[name] = value.get<long long>();
      ASSERT_TRUE(f.valid(key, t, p)) << describe(p);
      ASSERT_EQ(f.complete(key, t, p), p) << describe(p);
      const LaunchPlan plan = f.plan(key, t, p);
      EXPECT_EQ(v.at("workspace").get<std::uint64_t>(), plan.workspace_bytes);
      if (v.contains("diagnostic")) {
        // A timing of part of the plan: each of its launches is one of the plan's (PDL aside).
        for (const auto& l : v.at("launches")) {
          const auto same = [&](const LaunchSpec& s) {
            return l.at("entry").get<std::string>() == s.entry &&
                   l.at("grid").get<std::vector<std::uint32_t>>() ==
                       std::vector<std::uint32_t>(s.grid.begin(), s.grid.end()) &&
                   l.at("smem").get<std::uint32_t>() == s.smem_bytes;
          };
          EXPECT_TRUE(std::any_of(plan.launches.begin(), plan.launches.end(), same)) << l.dump();
        }
        continue;
      }
      ASSERT_EQ(v.at("launches").size(), plan.launches.size());
      for (std::size_t i = 0; i < plan.launches.size(); ++i) {
        const auto& l = v.at("launches")[i];
        EXPECT_EQ(l.at("entry").get<std::string>(), plan.launches[i].entry);
        EXPECT_EQ(l.at("grid").get<std::vector<std::uint32_t>>(),
                  std::vector<std::uint32_t>(plan.launches[i].grid.begin(), plan.launches[i].grid.end()));
        EXPECT_EQ(l.at("block").get<std::vector<std::uint32_t>>(),
                  std::vector<std::uint32_t>(plan.launches[i].block.begin(), plan.launches[i].block.end()));
        EXPECT_EQ(l.at("smem").get<std::uint32_t>(), plan.launches[i].smem_bytes);
        EXPECT_EQ(l.value("pdl", false), plan.launches[i].pdl) << l.dump();
      }
    }
  }
}

void check_hopper_seeds(const Family& f, const Target& t, const SeedCheck& each, const SeedsCheck& per_key) {
  Target ampere;
  ampere.arch = "sm_80";
  ampere.cc_major = 8;
  for (const GemmKey& key : llama_keys()) {
    if (not_searched_for(f, key)) continue;  // rejected, or declined for an exact key (issue 29)
    const auto seeds = completed_seeds(f, key, t);
    ASSERT_FALSE(seeds.empty()) << key.shape_line();
    for (const Params& p : seeds) {
      ASSERT_TRUE(f.valid(key, t, p)) << key.shape_line() << " " << describe(p);
      EXPECT_FALSE(f.valid(key, ampere, p)) << "wgmma needs sm_90a";
      const auto plan = parse_plan_from_source(render(f, key, t, p));
      ASSERT_TRUE(std::holds_alternative<LaunchPlan>(plan)) << describe(p);
      const auto& lp = std::get<LaunchPlan>(plan);
      EXPECT_EQ(lp, f.plan(key, t, p));
      each(key, p, lp);
    }
    if (per_key) per_key(key, seeds);
  }
}

void expect_row_source(const Family& f, std::string_view name, std::initializer_list<std::string_view> entries) {
  EXPECT_EQ(f.name, name);
  for (const std::string_view entry : entries) EXPECT_NE(f.source.find(entry), std::string_view::npos) << entry;
}

}  // namespace kd::builtin::test
