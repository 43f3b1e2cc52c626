#include "builtin/lab_case.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>


namespace kd::builtin {

GemmKey lab_case_key(const nlohmann::json& c) {
  const std::string dt = c.at("dtype"), ta = c.value("ta", "T"), tb = c.value("tb", "N");
  const long long m = c.at("m"), n = c.at("n"), k = c.at("k"), batch = c.value("batch", 1LL);
  const auto defs = c.value("defines", nlohmann::json::object());
  const bool beta0 = defs.value("KD_BETA_ZERO", 1) == 1, bias = defs.value("KD_BIAS", 0) == 1;
  const std::string strides =
      batch > 1 ? fmt::format(" stride_a={} stride_b={} stride_c={}", m * k, k * n, m * n) : std::string();
  return std::get<GemmKey>(parse_key(fmt::format(
      "gemm a={0} b={0} c={0} compute=f32 ta={1} tb={2} m={3} n={4} k={5} lda={6} ldb={7} ldc={3} batch={8}{9} "
      "epilogue={10} beta0={11}{12}",
      dt, ta, tb, m, n, k, ta == "T" ? k : m, tb == "N" ? k : n, batch, strides, bias ? "bias" : "none",
      beta0 ? 1 : 0, c.value("tf32", false) ? " precision=tf32" : "")));
}

std::optional<std::string> lab_refuses(const GemmKey& key) {
  const bool ta = key.ta == Transpose::T, tb = key.tb == Transpose::T;
  const bool packed_batch = key.batch == 1 || (key.stride_a == key.m * key.k && key.stride_b == key.k * key.n &&
                                                key.stride_c == key.m * key.n);
  if (!packed_batch || key.lda != (ta ? key.k : key.m) || key.ldb != (tb ? key.n : key.k) || key.ldc != key.m)
    return "the kernel lab runs packed operands (and batch entries one after another): " + key.shape_line();
  if (key.a != key.b) return "the kernel lab takes one type for A and B";
  return std::nullopt;
}

}  // namespace kd::builtin
