// Printing key lines, shared by every operator's key (gemm_key.cpp, row_key.cpp): the token writer
// and the device part a full line ends with, so that GEMM and row-operator lines print and refuse
// a device part the same way. Internal to key/.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "key/gemm_key.hpp"

namespace kd::key_print {

// Long enough for every shape line and most full lines: one allocation per print.
inline constexpr std::size_t kLineReserve = 256;

// Appends `name=value` tokens, each preceded by a blank (the op word starts the line).
class LineWriter {
public:
  explicit LineWriter(std::string& out) : out_(out) {}
  void word(std::string_view w) { out_ += w; }
  void token(std::string_view name, std::string_view value) {
    out_ += ' ';
    out_ += name;
    out_ += '=';
    out_ += value;
  }
  void token(std::string_view name, std::int64_t value) {
    std::array<char, 24> digits{};
    const auto res = std::to_chars(digits.data(), digits.data() + digits.size(), value);
    token(name, std::string_view(digits.data(), static_cast<std::size_t>(res.ptr - digits.data())));
  }
  void flag(std::string_view name, bool value) { token(name, value ? "1" : "0"); }
  // ` arch=sm_90 gpu="NVIDIA H100 80GB HBM3" sms=132`. Call printable_device first.
  void device_part(const DevicePart& d) {
    token("arch", d.arch);
    out_ += " gpu=\"";
    out_ += d.gpu;
    out_ += '"';
    token("sms", static_cast<std::int64_t>(d.sms));
  }

private:
  std::string& out_;
};

// The device part a full line prints. Throws kd::Error (usage) when `device` is empty
// ("full_line() of a key without a device part") or could not be read back from a line (arch not
// sm_<digits>[suffix], gpu name empty or holding '"' or a control char): a caller bug, not a miss.
const DevicePart& printable_device(const std::optional<DevicePart>& device);
// Throws as printable_device does when `device` could not be read back.
void check_printable(const DevicePart& device);

}  // namespace kd::key_print
