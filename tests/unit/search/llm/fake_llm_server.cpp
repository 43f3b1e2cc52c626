#include "fake_llm_server.hpp"

#include <algorithm>
#include <cctype>

#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace kd::llm::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

FakeLlmServer::FakeLlmServer()
    : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  port_ = acceptor_.local_endpoint().port();
  acceptor_thread_ = std::thread([this] { accept_loop(); });
}

FakeLlmServer::~FakeLlmServer() {
  stopping_ = true;
  stop_cv_.notify_all();
  {  // wake the blocking accept()
    boost::system::error_code ec;
    tcp::socket poke(io_);
    poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
  }
  acceptor_thread_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mutex_);
    workers.swap(workers_);
  }
  for (std::thread& worker : workers) worker.join();
}

std::string FakeLlmServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void FakeLlmServer::push(ScriptedResponse response) {
  std::lock_guard lock(mutex_);
  script_.push_back(std::move(response));
}

std::vector<ReceivedRequest> FakeLlmServer::requests() const {
  std::lock_guard lock(mutex_);
  return received_;
}

void FakeLlmServer::accept_loop() {
  while (!stopping_) {
    tcp::socket socket(io_);
    boost::system::error_code ec;
    acceptor_.accept(socket, ec);
    if (ec || stopping_) continue;
    std::lock_guard lock(mutex_);
    workers_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
  }
}

void FakeLlmServer::serve(tcp::socket socket) {
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  boost::system::error_code ec;
  http::read(socket, buffer, parser, ec);
  if (ec) return;
  const auto& req = parser.get();

  ReceivedRequest got;
  got.method = std::string(req.method_string());
  got.target = std::string(req.target());
  for (const auto& field : req) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    got.headers[name] = std::string(field.value());
  }
  got.body = req.body();

  ScriptedResponse scripted{500, R"({"error":"no scripted response"})", {}, {}};
  {
    std::lock_guard lock(mutex_);
    received_.push_back(std::move(got));
    if (!script_.empty()) {
      scripted = std::move(script_.front());
      script_.pop_front();
    }
  }
  const int now = ++in_flight_;
  int seen = max_in_flight_.load();
  while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
  }
  if (scripted.delay.count() > 0) {
    std::unique_lock lock(mutex_);
    stop_cv_.wait_for(lock, scripted.delay, [this] { return stopping_.load(); });
  }
  http::response<http::string_body> res{static_cast<http::status>(scripted.status), 11};
  res.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : scripted.headers) res.set(name, value);
  res.keep_alive(false);
  res.body() = std::move(scripted.body);
  res.prepare_payload();
  // Counted out before the reply leaves: a client that has the reply may start its next request
  // at once, and must not be seen overlapping with this one.
  --in_flight_;
  http::write(socket, res, ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
}

std::string openai_reply(std::string_view text, std::string_view finish_reason, int prompt_tokens,
                         int completion_tokens) {
  const nlohmann::json body = {
      {"id", "chatcmpl-test"},
      {"object", "chat.completion"},
      {"model", "test-model"},
      {"choices", {{{"index", 0},
                    {"message", {{"role", "assistant"}, {"content", text}}},
                    {"finish_reason", finish_reason}}}},
      {"usage", {{"prompt_tokens", prompt_tokens},
                 {"completion_tokens", completion_tokens},
                 {"total_tokens", prompt_tokens + completion_tokens}}}};
  return body.dump();
}

std::string anthropic_reply(std::string_view text, std::string_view stop_reason, int input_tokens,
                            int output_tokens) {
  const nlohmann::json body = {
      {"id", "msg_test"},
      {"type", "message"},
      {"role", "assistant"},
      {"model", "test-model"},
      {"content", {{{"type", "text"}, {"text", text}}}},
      {"stop_reason", stop_reason},
      {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
  return body.dump();
}

}  // namespace kd::llm::test
