// A fake server, a config pointing at it with short timeouts and backoffs, a known key in the
// environment, and spdlog output captured so that tests can assert what was (not) logged.
#pragma once

#include <cstdlib>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "fake_llm_server.hpp"
#include "llm/llm_config.hpp"

namespace kd::llm::test {

inline constexpr const char* kTestKey = "sk-kdtest-5f2b9c1e0d7a4e38";
inline constexpr const char* kTestKeyEnv = "KD_TEST_LLM_API_KEY";

class LlmTest : public ::testing::TestWithParam<ApiKind> {
protected:
  void SetUp() override {
    ::setenv(kTestKeyEnv, kTestKey, 1);
    ::setenv("no_proxy", "127.0.0.1", 1);  // a proxy in the environment must not see the test
    ::setenv("NO_PROXY", "127.0.0.1", 1);
    previous_logger_ = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    auto logger = std::make_shared<spdlog::logger>("llm-test", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  void TearDown() override {
    spdlog::set_default_logger(previous_logger_);
    EXPECT_EQ(log_.str().find(kTestKey), std::string::npos) << "the key was logged:\n" << log_.str();
  }

  LlmConfig config() const {
    LlmConfig c;
    c.api = GetParam();
    c.base_url = server_.base_url();
    c.model = "test-model";
    c.key = KeyFromEnv{kTestKeyEnv};
    c.connect_timeout = std::chrono::milliseconds(2000);
    c.request_timeout = std::chrono::milliseconds(5000);
    c.retry.max_attempts = 3;
    c.retry.initial_backoff = std::chrono::milliseconds(5);
    c.retry.max_backoff = std::chrono::milliseconds(20);
    c.max_reply_tokens = 2000;
    c.min_reply_tokens = 100;
    return c;
  }

  // A 200 reply in the API under test.
  std::string reply(std::string_view text, bool cut = false, int in = 100, int out = 50) const {
    return GetParam() == ApiKind::openai_chat
               ? openai_reply(text, cut ? "length" : "stop", in, out)
               : anthropic_reply(text, cut ? "max_tokens" : "end_turn", in, out);
  }

  std::string log() const { return log_.str(); }

  FakeLlmServer server_;

private:
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> previous_logger_;
};

inline std::string api_name(const ::testing::TestParamInfo<ApiKind>& info) {
  return std::string(to_string(info.param));
}

}  // namespace kd::llm::test

namespace kd::llm {
// Names the API in gtest's output instead of a byte dump.
inline void PrintTo(ApiKind kind, std::ostream* os) { *os << to_string(kind); }
}  // namespace kd::llm
