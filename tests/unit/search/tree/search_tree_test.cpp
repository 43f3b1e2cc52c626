#include "tree/search_tree.hpp"

#include <gtest/gtest.h>

namespace kd::search {
namespace {

Node make(int parent, int round, std::string verdict, double us, std::string idea = "i") {
  Node n;
  n.parent = parent;
  n.round = round;
  n.proposer = "builtin";
  n.family = "simt_tiled";
  n.idea = std::move(idea);
  n.source = "src" + std::to_string(us) + n.idea;
  n.source_hash = source_hash(n.source);
  n.verdict = std::move(verdict);
  n.candidate_us = us;
  n.baseline_us = 10;
  return n;
}

TEST(SearchTree, TopKTakesOnlyCorrectNodesFastestFirst) {
  SearchTree t("s1", "gemm ...");
  t.add(make(-1, 0, "not_faster", 12));
  t.add(make(-1, 0, "wrong_result", 1));  // fast but wrong: never a seed
  t.add(make(-1, 0, "passed", 8));
  t.add(make(-1, 0, "passed", 9));
  EXPECT_EQ(t.top_k(2), (std::vector<int>{2, 3}));
  EXPECT_EQ(t.top_k(10), (std::vector<int>{2, 3, 0}));
  EXPECT_EQ(t.best(), 2);
}

TEST(SearchTree, TriedAndSourceDeduplication) {
  SearchTree t("s1", "k");
  const int seed = t.add(make(-1, 0, "passed", 8));
  t.add(make(seed, 1, "passed", 7, "double BK"));
  EXPECT_TRUE(t.tried(seed, "double BK"));
  EXPECT_FALSE(t.tried(seed, "halve BK"));
  EXPECT_TRUE(t.has_source(t.node(1).source_hash));
  EXPECT_FALSE(t.has_source(source_hash("other")));
}

TEST(SearchTree, JsonRoundTripKeepsEveryField) {
  SearchTree t("search-42", "gemm a=f32 ...");
  t.add(make(-1, 0, "passed", 8));
  Node n = make(0, 1, "compile_failed", 0, "split K");
  n.compile_log = "error: x";
  n.compile_status = "compile_error";
  n.detail = "does not compile";
  n.compile_ms = 12.5;
  t.add(n);
  t.close_round(0);
  t.close_round(1);
  const SearchTree back = SearchTree::from_json(nlohmann::json::parse(t.to_json().dump()));
  EXPECT_EQ(back.search_id(), "search-42");
  EXPECT_EQ(back.nodes(), t.nodes());
  EXPECT_EQ(back.rounds(), t.rounds());
  EXPECT_EQ(back.rounds()[0].best_us, 8);
}

TEST(SearchTree, MalformedJsonThrows) {
  EXPECT_THROW(SearchTree::from_json(nlohmann::json::parse(R"({"search_id":"x"})")), nlohmann::json::exception);
}

}  // namespace
}  // namespace kd::search
