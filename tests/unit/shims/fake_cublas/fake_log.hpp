// The stand-in libraries' call log: every GEMM / matmul they receive, one text line per call with
// every argument value, in arrival order. Exported by the stand-in libcublasLt.so.13.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

// A host scalar as the log writes it: an f16 one by its bits ("h3c00"), an f32 one by value.
inline std::string host_scalar(const void* p, bool half) {
  if (half) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, p, 2);
    return format("h%04x", bits);
  }
  float v = 0;
  std::memcpy(&v, p, 4);
  return format("%g", v);
}
}  // namespace fake_cublas
