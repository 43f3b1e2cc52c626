// The stand-in libraries' call log: every GEMM / matmul they receive, one text line per call with
// every argument value, in arrival order. Exported by the stand-in libcublasLt.so.13.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

extern "C" {
void fake_cublas_log_append(const char* line);
// The whole log, one call per line; valid until the next append or clear.
const char* fake_cublas_log_text();
void fake_cublas_log_clear();
}

namespace fake_cublas {
// printf into a std::string.
inline std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out(static_cast<std::size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, ap2);
  va_end(ap2);
  return out;
}
}  // namespace fake_cublas
