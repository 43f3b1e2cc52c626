// A scripted HTTP server for the LLM client tests, on 127.0.0.1 with an ephemeral port, run on
// background threads of the test process. Each request takes the next scripted response (status,
// headers, body, delay before answering) and is logged for assertions. One connection per request.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

namespace kd::llm::test {

struct ScriptedResponse {
  unsigned status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds delay{0};
};

struct ReceivedRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body); }
};

class FakeLlmServer {
public:
  FakeLlmServer();
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  std::string base_url() const;
  // Queued in order; a request with nothing queued gets 500 "no scripted response".
  void push(ScriptedResponse response);
  std::vector<ReceivedRequest> requests() const;
  // The most requests seen at once between being read and being answered.
  int max_in_flight() const { return max_in_flight_.load(); }

private:
  void accept_loop();
  void serve(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  std::deque<ScriptedResponse> script_;
  std::vector<ReceivedRequest> received_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  std::thread acceptor_thread_;
};

// Reply bodies in each API's format.
std::string openai_reply(std::string_view text, std::string_view finish_reason = "stop",
                         int prompt_tokens = 100, int completion_tokens = 50);
std::string anthropic_reply(std::string_view text, std::string_view stop_reason = "end_turn",
                            int input_tokens = 100, int output_tokens = 50);

}  // namespace kd::llm::test
