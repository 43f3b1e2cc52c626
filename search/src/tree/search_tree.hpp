// The search tree: every candidate a search tried, with its parent, proposer, idea, source hash,
// compile log, verdict and times. Stored in the cache's `trees` database as JSON under the search
// id, so `kdctl show` can explain how a winner was found, and reloaded to resume or to seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cublaslt/algo.hpp"

namespace kd::search {

struct Node {
  int id = 0;
  int parent = -1;  // -1: a round-0 seed
  int round = 0;
  std::string proposer;   // "builtin", "llm", "cublaslt", "cache"
  std::string family;     // builtin family name, empty for others
  std::string idea;       // the idea in words ("seed: family default" for seeds)
  std::string params;     // builtin parameters ("KD_KC=1024 ..."), empty for others
  std::string source_hash;
  std::string source;     // kept so a node can seed the next round and be published
  std::optional<CublasLtAlgo> cublaslt;  // a cuBLASLt node's algorithm (no source, never a seed)
  std::string compile_status;  // "ok" or the compile service's reason
  std::string compile_log;     // truncated
  std::string verdict;    // eval::Rule name, or "not_evaluated"
  std::string detail;     // the verdict's message
  double candidate_us = 0;
  double baseline_us = 0;
  double compile_ms = 0;

  // Correct: passed the gate (verdict passed or not_faster), so it may seed the next round.
  bool correct() const { return verdict == "passed" || verdict == "not_faster"; }
  bool operator==(const Node&) const = default;
};

struct RoundSummary {
  int round = 0;
  int candidates = 0;
  int correct = 0;
  double best_us = 0;  // best correct candidate so far (0: none)
  bool operator==(const RoundSummary&) const = default;
};

class SearchTree {
public:
  SearchTree() = default;
  SearchTree(std::string search_id, std::string key_line);

  const std::string& search_id() const { return search_id_; }
  const std::string& key_line() const { return key_line_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<RoundSummary>& rounds() const { return rounds_; }

  // Adds a node, assigning its id; returns the id.
  int add(Node node);
  Node& node(int id) { return nodes_.at(static_cast<std::size_t>(id)); }
  const Node& node(int id) const { return nodes_.at(static_cast<std::size_t>(id)); }
  void close_round(int round);

  // The k fastest correct nodes (ties: lower id first).
  std::vector<int> top_k(int k) const;
  // The fastest correct node, if any.
  std::optional<int> best() const;
  // Whether `seed` already has a child made from this idea.
  bool tried(int seed, const std::string& idea) const;
  // Whether any node has this source hash (the search never evaluates a source, or a cuBLASLt
  // algorithm, twice).
  bool has_source(const std::string& source_hash) const;

  nlohmann::json to_json() const;
  static SearchTree from_json(const nlohmann::json& j);  // throws nlohmann::json::exception

private:
  std::string search_id_;
  std::string key_line_;
  std::vector<Node> nodes_;
  std::vector<RoundSummary> rounds_;
};

// Hex XXH3-64 of a source text.
std::string source_hash(const std::string& source);
// What stands for a cuBLASLt node's source hash: the hash of its version and algorithm bytes.
std::string algo_hash(const CublasLtAlgo& algo);

}  // namespace kd::search
