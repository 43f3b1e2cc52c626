#include "tree/search_tree.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <xxhash.h>

namespace kd::search {

SearchTree::SearchTree(std::string search_id, std::string key_line)
    : search_id_(std::move(search_id)), key_line_(std::move(key_line)) {}

int SearchTree::add(Node node) {
  node.id = static_cast<int>(nodes_.size());
  nodes_.push_back(std::move(node));
  return nodes_.back().id;
}

void SearchTree::close_round(int round) {
  RoundSummary s;
  s.round = round;
  for (const Node& n : nodes_) {
    if (n.round != round) continue;
    ++s.candidates;
    if (n.correct()) ++s.correct;
  }
  if (auto b = best()) s.best_us = node(*b).candidate_us;
  rounds_.push_back(s);
}

std::vector<int> SearchTree::top_k(int k) const {
  std::vector<int> ids;
  for (const Node& n : nodes_)
    if (n.correct() && n.candidate_us > 0) ids.push_back(n.id);
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int a, int b) { return node(a).candidate_us < node(b).candidate_us; });
  if (static_cast<int>(ids.size()) > k) ids.resize(static_cast<std::size_t>(std::max(0, k)));
  return ids;
}

std::optional<int> SearchTree::best() const {
  const std::vector<int> top = top_k(1);
  if (top.empty()) return std::nullopt;
  return top.front();
}

bool SearchTree::tried(int seed, const std::string& idea) const {
  return std::any_of(nodes_.begin(), nodes_.end(),
                     [&](const Node& n) { return n.parent == seed && n.idea == idea; });
}

bool SearchTree::has_source(const std::string& hash) const {
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& n) { return n.source_hash == hash; });
}

nlohmann::json SearchTree::to_json() const {
  nlohmann::json nodes = nlohmann::json::array();
  for (const Node& n : nodes_) {
    nodes.push_back({{"id", n.id}, {"parent", n.parent}, {"round", n.round}, {"proposer", n.proposer},
                     {"family", n.family}, {"idea", n.idea}, {"params", n.params},
                     {"source_hash", n.source_hash}, {"source", n.source},
                     {"compile_status", n.compile_status}, {"compile_log", n.compile_log},
                     {"verdict", n.verdict}, {"detail", n.detail}, {"candidate_us", n.candidate_us},
                     {"baseline_us", n.baseline_us}, {"compile_ms", n.compile_ms}});
    if (n.cublaslt)
      nodes.back()["cublaslt"] = {{"algo", algo_hex(n.cublaslt->bytes)},
                                  {"workspace_bytes", n.cublaslt->workspace_bytes},
                                  {"version", n.cublaslt->version}};
  }
  nlohmann::json rounds = nlohmann::json::array();
  for (const RoundSummary& r : rounds_)
    rounds.push_back({{"round", r.round}, {"candidates", r.candidates}, {"correct", r.correct},
                      {"best_us", r.best_us}});
  return {{"schema", 1}, {"search_id", search_id_}, {"key", key_line_}, {"nodes", nodes},
          {"rounds", rounds}};
}

SearchTree SearchTree::from_json(const nlohmann::json& j) {
  SearchTree t(j.at("search_id").get<std::string>(), j.at("key").get<std::string>());
  for (const auto& x : j.at("nodes")) {
    Node n;
    n.id = x.at("id").get<int>();
    n.parent = x.at("parent").get<int>();
    n.round = x.at("round").get<int>();
    n.proposer = x.at("proposer").get<std::string>();
    n.family = x.at("family").get<std::string>();
    n.idea = x.at("idea").get<std::string>();
    n.params = x.at("params").get<std::string>();
    n.source_hash = x.at("source_hash").get<std::string>();
    n.source = x.at("source").get<std::string>();
    n.compile_status = x.at("compile_status").get<std::string>();
    n.compile_log = x.at("compile_log").get<std::string>();
    n.verdict = x.at("verdict").get<std::string>();
    n.detail = x.at("detail").get<std::string>();
    n.candidate_us = x.at("candidate_us").get<double>();
    n.baseline_us = x.at("baseline_us").get<double>();
    n.compile_ms = x.at("compile_ms").get<double>();
    if (const auto lt = x.find("cublaslt"); lt != x.end()) {
      const auto bytes = algo_bytes_from_hex(lt->at("algo").get<std::string>());
      if (!bytes) throw nlohmann::json::other_error::create(501, "a cuBLASLt node's algorithm is not 64 bytes of hex", &x);
      n.cublaslt = CublasLtAlgo{*bytes, lt->at("workspace_bytes").get<std::uint64_t>(), lt->at("version").get<int>()};
    }
    if (n.id != static_cast<int>(t.nodes_.size())) throw nlohmann::json::other_error::create(501, "node ids out of order", &x);
    t.nodes_.push_back(std::move(n));
  }
  for (const auto& x : j.at("rounds"))
    t.rounds_.push_back({x.at("round").get<int>(), x.at("candidates").get<int>(),
                         x.at("correct").get<int>(), x.at("best_us").get<double>()});
  return t;
}

std::string source_hash(const std::string& source) {
  return fmt::format("{:016x}", XXH3_64bits(source.data(), source.size()));
}

std::string algo_hash(const CublasLtAlgo& algo) {
  return source_hash(fmt::format("cublaslt {} {}", algo.version, algo_hex(algo.bytes)));
}

}  // namespace kd::search
