#include "llm/llm_client.hpp"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "llm_test_fixture.hpp"

namespace kd::llm {
namespace {

using namespace std::chrono_literals;
using test::kTestKey;
using test::ScriptedResponse;

class LlmClientTest : public test::LlmTest {
protected:
  ChatRequest request() const { return ChatRequest{"SYSTEM-PROMPT", "USER-PROMPT", 1000, 0.5}; }
};

TEST_P(LlmClientTest, RequestIsWellFormedAndUsageIsCharged) {
  server_.push({200, reply("hello", false, 120, 30)});
  auto budget = std::make_shared<TokenBudget>(100'000);
  LlmClient client(config(), budget);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<ChatReply>(result)) << std::get<LlmFailure>(result).message;
  const auto& reply = std::get<ChatReply>(result);
  EXPECT_EQ(reply.text, "hello");
  EXPECT_EQ(reply.finish, FinishReason::stop);
  EXPECT_EQ(reply.attempts, 1);
  EXPECT_EQ(budget->prompt_tokens_used(), 120);
  EXPECT_EQ(budget->completion_tokens_used(), 30);

  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& got = requests[0];
  EXPECT_EQ(got.method, "POST");
  EXPECT_EQ(got.headers.at("content-type"), "application/json");
  const auto body = got.json();
  EXPECT_EQ(body.at("model"), "test-model");
  EXPECT_EQ(body.at("max_tokens"), 1000);
  EXPECT_EQ(body.at("temperature"), 0.5);
  if (GetParam() == ApiKind::openai_chat) {
    EXPECT_EQ(got.target, "/v1/chat/completions");
    EXPECT_EQ(got.headers.at("authorization"), std::string("Bearer ") + kTestKey);
    EXPECT_EQ(got.headers.count("x-api-key"), 0u);
    ASSERT_EQ(body.at("messages").size(), 2u);
    EXPECT_EQ(body["messages"][0]["role"], "system");
    EXPECT_EQ(body["messages"][0]["content"], "SYSTEM-PROMPT");
    EXPECT_EQ(body["messages"][1]["role"], "user");
    EXPECT_EQ(body["messages"][1]["content"], "USER-PROMPT");
  } else {
    EXPECT_EQ(got.target, "/v1/messages");
    EXPECT_EQ(got.headers.at("x-api-key"), kTestKey);
    EXPECT_EQ(got.headers.at("anthropic-version"), "2023-06-01");
    EXPECT_EQ(got.headers.count("authorization"), 0u);
    EXPECT_EQ(body.at("system"), "SYSTEM-PROMPT");
    ASSERT_EQ(body.at("messages").size(), 1u);
    EXPECT_EQ(body["messages"][0]["role"], "user");
    EXPECT_EQ(body["messages"][0]["content"], "USER-PROMPT");
  }
}

TEST_P(LlmClientTest, NoKeyMeansNoAuthHeader) {
  server_.push({200, reply("hi")});
  LlmConfig c = config();
  c.key = NoKey{};
  c.base_url += "/v1/";  // a base URL that already names /v1 is not given a second one
  LlmClient client(c, nullptr);
  ASSERT_TRUE(std::holds_alternative<ChatReply>(client.complete(request())));
  const auto got = server_.requests().at(0);
  EXPECT_EQ(got.headers.count("authorization") + got.headers.count("x-api-key"), 0u);
  EXPECT_TRUE(got.target == "/v1/chat/completions" || got.target == "/v1/messages") << got.target;
}

TEST_P(LlmClientTest, RateLimitedThenSuccessIsRetried) {
  server_.push({429, R"({"error":"slow down"})", {{"Retry-After", "0"}}});
  server_.push({200, reply("after retry")});
  LlmClient client(config(), nullptr);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<ChatReply>(result)) << std::get<LlmFailure>(result).message;
  EXPECT_EQ(std::get<ChatReply>(result).text, "after retry");
  EXPECT_EQ(std::get<ChatReply>(result).attempts, 2);
  EXPECT_EQ(server_.requests().size(), 2u);
  EXPECT_EQ(server_.requests()[0].body, server_.requests()[1].body);
  EXPECT_NE(log().find("retrying"), std::string::npos);
}

TEST_P(LlmClientTest, RetryAfterIsHonoured) {
  server_.push({503, "busy", {{"Retry-After", "1"}}});
  server_.push({200, reply("ok")});
  LlmClient client(config(), nullptr);
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(std::holds_alternative<ChatReply>(client.complete(request())));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1s);
}

TEST_P(LlmClientTest, RetryAfterBeyondTheLimitFailsAtOnce) {
  server_.push({429, "quota", {{"Retry-After", "3600"}}});
  LlmClient client(config(), nullptr);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::http_error);
  EXPECT_NE(std::get<LlmFailure>(result).message.find("3600000 ms"), std::string::npos);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_P(LlmClientTest, ServerErrorsExhaustTheRetries) {
  for (int i = 0; i < 3; ++i) server_.push({502, "bad gateway"});
  LlmClient client(config(), nullptr);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  const auto& failure = std::get<LlmFailure>(result);
  EXPECT_EQ(failure.fate, ReplyFate::http_error);
  EXPECT_EQ(failure.attempts, 3);
  EXPECT_NE(failure.message.find("HTTP 502"), std::string::npos) << failure.message;
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_P(LlmClientTest, ClientErrorIsNotRetried) {
  server_.push({400, R"({"error":"bad model"})"});
  LlmClient client(config(), nullptr);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::http_error);
  EXPECT_NE(std::get<LlmFailure>(result).message.find("bad model"), std::string::npos);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_P(LlmClientTest, ReplySlowerThanTheTimeoutIsATimeoutChargedInFull) {
  server_.push({200, reply("too late"), {}, 2000ms});
  LlmConfig c = config();
  c.request_timeout = 300ms;
  auto budget = std::make_shared<TokenBudget>(100'000);
  LlmClient client(c, budget);
  const auto started = std::chrono::steady_clock::now();
  auto result = client.complete(request());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1500ms);
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::timeout);
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_GE(budget->completion_tokens_used(), 1000);  // the server may have spent them
}

TEST_P(LlmClientTest, TruncatedJsonIsABadResponse) {
  const std::string whole = reply("a kernel");
  server_.push({200, whole.substr(0, whole.size() / 2)});
  LlmClient client(config(), nullptr);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::bad_response);
  EXPECT_NE(std::get<LlmFailure>(result).message.find("not complete JSON"), std::string::npos);
}

TEST_P(LlmClientTest, JsonWithoutTextIsABadResponse) {
  server_.push({200, R"({"id":"x","choices":[],"content":[]})"});
  LlmClient client(config(), nullptr);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::bad_response);
}

TEST_P(LlmClientTest, KeyEchoedByTheServerIsRedactedEverywhere) {
  server_.push({401, std::string(R"({"error":"invalid key )") + kTestKey + "\"}"});
  server_.push({200, reply(std::string("your key is ") + kTestKey)});
  LlmClient client(config(), nullptr);
  auto denied = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(denied));
  const std::string message = std::get<LlmFailure>(denied).message;
  EXPECT_EQ(message.find(kTestKey), std::string::npos) << message;
  EXPECT_NE(message.find("[redacted]"), std::string::npos) << message;
  auto echoed = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<ChatReply>(echoed));
  EXPECT_EQ(std::get<ChatReply>(echoed).text, "your key is [redacted]");
  // TearDown asserts the key is absent from the captured log.
}

TEST_P(LlmClientTest, ExhaustedBudgetSendsNothing) {
  auto budget = std::make_shared<TokenBudget>(50);
  LlmClient client(config(), budget);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::budget_exhausted);
  EXPECT_TRUE(server_.requests().empty());
  EXPECT_EQ(budget->tokens_used(), 0);
}

TEST_P(LlmClientTest, BudgetLowersMaxTokensAndHolds) {
  constexpr std::int64_t kLimit = 2500;
  auto budget = std::make_shared<TokenBudget>(kLimit);
  LlmClient client(config(), budget);
  int sent = 0;
  for (int i = 0; i < 10; ++i) {
    server_.push({200, reply("ok", false, 100, 700)});
    auto result = client.complete(request());
    if (std::holds_alternative<LlmFailure>(result)) {
      EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::budget_exhausted);
      break;
    }
    ++sent;
  }
  EXPECT_EQ(server_.requests().size(), static_cast<std::size_t>(sent));
  EXPECT_GE(sent, 2);
  EXPECT_LE(budget->tokens_used(), kLimit);
  // The last request sent asked for no more than was left.
  const auto last = server_.requests().back().json();
  EXPECT_LT(last.at("max_tokens").get<std::int64_t>(), 1000);
}

TEST_P(LlmClientTest, ConcurrencyLimitHolds) {
  constexpr int kRequests = 6;
  for (int i = 0; i < kRequests; ++i) server_.push({200, reply("ok"), {}, 150ms});
  LlmConfig c = config();
  c.max_concurrent_requests = 2;
  LlmClient client(c, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&] {
      if (std::holds_alternative<ChatReply>(client.complete(request()))) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kRequests);
  EXPECT_EQ(server_.max_in_flight(), 2);
}

TEST_P(LlmClientTest, NoServerIsConnectFailedAfterRetries) {
  LlmConfig c = config();
  {
    test::FakeLlmServer closed;
    c.base_url = closed.base_url();
  }  // its port is closed now
  LlmClient client(c, nullptr);
  auto result = client.complete(request());
  ASSERT_TRUE(std::holds_alternative<LlmFailure>(result));
  EXPECT_EQ(std::get<LlmFailure>(result).fate, ReplyFate::connect_failed);
  EXPECT_EQ(std::get<LlmFailure>(result).attempts, 3);
}

INSTANTIATE_TEST_SUITE_P(Apis, LlmClientTest,
                         ::testing::Values(ApiKind::openai_chat, ApiKind::anthropic_messages),
                         test::api_name);

}  // namespace
}  // namespace kd::llm
