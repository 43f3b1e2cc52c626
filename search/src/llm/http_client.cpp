#include "llm/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <memory>
#include <mutex>
#include <string_view>

#include "common/error.hpp"

namespace kd::llm {
namespace {

struct CurlEasyDeleter {
  void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyDeleter>;

struct CurlSlistDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};
using CurlSlist = std::unique_ptr<curl_slist, CurlSlistDeleter>;

// curl_global_init is not thread-safe and must run once before any easy handle exists.
void ensure_curl_initialised() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] { rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (rc != CURLE_OK) {
    throw Error(ErrorDomain::system, static_cast<int>(rc),
                std::string("curl_global_init: ") + curl_easy_strerror(rc));
  }
}

struct ReplySink {
  std::string body;
  std::size_t max_bytes = 0;
  bool too_large = false;
  std::optional<std::chrono::milliseconds> retry_after;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<ReplySink*>(user);
  const std::size_t bytes = size * count;
  if (sink->body.size() + bytes > sink->max_bytes) {
    sink->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  sink->body.append(data, bytes);
  return bytes;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// Retry-After is delta-seconds or an HTTP date (RFC 9110 10.2.3).
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 9) return std::chrono::hours(24 * 365);
    return std::chrono::seconds(std::stol(std::string(value)));
  }
  const time_t when = curl_getdate(std::string(value).c_str(), nullptr);
  if (when < 0) return std::nullopt;
  const time_t now = std::time(nullptr);
  return std::chrono::seconds(when > now ? when - now : 0);
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<ReplySink*>(user);
  const std::size_t bytes = size * count;
  const std::string_view line(data, bytes);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size() &&
      std::equal(kName.begin(), kName.end(), line.begin(),
                 [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
    sink->retry_after = parse_retry_after(line.substr(kName.size()));
  }
  return bytes;
}

TransportFailureKind classify(CURLcode rc) {
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: return TransportFailureKind::timeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return TransportFailureKind::connect_failed;
    default: return TransportFailureKind::other;
  }
}

// curl_slist_append returns the list's head (new when the list was empty), or null leaving the
// list untouched.
void append_header(CurlSlist& list, const char* line) {
  curl_slist* head = curl_slist_append(list.get(), line);
  if (!head) throw Error(ErrorDomain::system, 0, "curl_slist_append failed");
  static_cast<void>(list.release());
  list.reset(head);
}

template <typename T>
void set_option(CURL* handle, CURLoption option, T value) {
  const CURLcode rc = curl_easy_setopt(handle, option, value);
  if (rc != CURLE_OK) {
    throw Error(ErrorDomain::system, static_cast<int>(rc),
                std::string("curl_easy_setopt: ") + curl_easy_strerror(rc));
  }
}

}  // namespace

std::variant<HttpResponse, TransportFailure> http_post(const HttpRequest& request,
                                                       const HttpLimits& limits) {
  ensure_curl_initialised();
  CurlEasy handle(curl_easy_init());
  if (!handle) throw Error(ErrorDomain::system, 0, "curl_easy_init failed");

  CurlSlist headers;
  for (const std::string& h : request.headers) append_header(headers, h.c_str());
  // "Expect:" stops curl from waiting for a 100-continue that many servers never send.
  append_header(headers, "Expect:");

  ReplySink sink;
  sink.max_bytes = limits.max_response_bytes;
  char error_text[CURL_ERROR_SIZE] = {};
  CURL* h = handle.get();
  set_option(h, CURLOPT_URL, request.url.c_str());
  set_option(h, CURLOPT_POST, 1L);
  set_option(h, CURLOPT_POSTFIELDS, request.body.data());
  set_option(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  set_option(h, CURLOPT_HTTPHEADER, headers.get());
  set_option(h, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we run on many threads
  set_option(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits.connect_timeout.count()));
  set_option(h, CURLOPT_TIMEOUT_MS, static_cast<long>(limits.request_timeout.count()));
  set_option(h, CURLOPT_WRITEFUNCTION, &on_body);
  set_option(h, CURLOPT_WRITEDATA, &sink);
  set_option(h, CURLOPT_HEADERFUNCTION, &on_header);
  set_option(h, CURLOPT_HEADERDATA, &sink);
  set_option(h, CURLOPT_ERRORBUFFER, error_text);
  set_option(h, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  set_option(h, CURLOPT_FOLLOWLOCATION, 0L);   // a redirect would resend the key elsewhere

  const CURLcode rc = curl_easy_perform(h);
  if (rc != CURLE_OK) {
    if (sink.too_large) {
      return TransportFailure{TransportFailureKind::reply_too_large,
                              "reply larger than " + std::to_string(limits.max_response_bytes) +
                                  " bytes"};
    }
    std::string message = curl_easy_strerror(rc);
    if (error_text[0] != '\0') message += std::string(": ") + error_text;
    return TransportFailure{classify(rc), std::move(message)};
  }
  HttpResponse response;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  response.body = std::move(sink.body);
  response.retry_after = sink.retry_after;
  return response;
}

}  // namespace kd::llm
