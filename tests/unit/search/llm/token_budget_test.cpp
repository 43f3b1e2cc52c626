#include "llm/token_budget.hpp"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace kd::llm {
namespace {

TEST(TokenBudget, ReservesWhatIsLeftWithinBounds) {
  TokenBudget budget(1000);
  auto first = budget.reserve(100, 700);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->tokens(), 700);
  auto second = budget.reserve(100, 700);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->tokens(), 300);  // lowered to what is left
  EXPECT_FALSE(budget.reserve(1, 10));
  EXPECT_EQ(budget.tokens_left(), 0);
}

TEST(TokenBudget, SettleChargesUsageAndReturnsTheRest) {
  TokenBudget budget(1000);
  {
    auto r = budget.reserve(100, 800);
    ASSERT_TRUE(r);
    r->settle(TokenUsage{150, 50});
    r->settle(TokenUsage{150, 50});  // once only
  }
  EXPECT_EQ(budget.tokens_used(), 200);
  EXPECT_EQ(budget.prompt_tokens_used(), 150);
  EXPECT_EQ(budget.tokens_left(), 800);
  { auto dropped = budget.reserve(100, 800); }  // released uncharged
  EXPECT_EQ(budget.tokens_left(), 800);
}

TEST(TokenBudget, ConcurrentReservationsNeverExceedTheLimit) {
  TokenBudget budget(10'000);
  std::atomic<std::int64_t> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (auto r = budget.reserve(7, 7)) {
          granted += r->tokens();
          r->settle(TokenUsage{3, 4});
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), budget.tokens_used());
  EXPECT_LE(budget.tokens_used(), 10'000);
  EXPECT_GT(budget.tokens_used(), 10'000 - 7);
}

}  // namespace
}  // namespace kd::llm
