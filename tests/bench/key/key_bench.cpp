// Key line costs for kdctl and the daemon, which parse and hash many lines: parse_key of a shape
// line and of a full line, the shorthand, printing, and hash() of a full key.
#include <benchmark/benchmark.h>

#include <string>
#include <variant>

#include "key/gemm_key.hpp"

namespace {

constexpr const char* kShapeLine =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 "
    "ldc=4096 batch=1 epilogue=none beta0=1";
constexpr const char* kFullLine =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=777 n=333 k=555 lda=800 ldb=333 ldc=777 "
    "batch=8 stride_a=444000 stride_b=0 stride_c=621591 epilogue=bias beta0=0 precision=tf32 "
    "arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";

kd::GemmKey must_parse(const char* line) {
  auto result = kd::parse_key(line);
  if (auto* e = std::get_if<kd::KeyError>(&result)) throw std::runtime_error(e->message);
  return std::get<kd::GemmKey>(result);
}

void parse_line(benchmark::State& state, const char* line) {
  const std::string text(line);
  for (auto _ : state) {
    auto result = kd::parse_key(text);
    benchmark::DoNotOptimize(result);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK_CAPTURE(parse_line, shape_line, kShapeLine);
BENCHMARK_CAPTURE(parse_line, full_line, kFullLine);
BENCHMARK_CAPTURE(parse_line, linear_shorthand, "linear dtype=bf16 tokens=16 in=4096 out=4096");

void print_full_line(benchmark::State& state) {
  const kd::GemmKey key = must_parse(kFullLine);
  for (auto _ : state) {
    std::string line = key.full_line();
    benchmark::DoNotOptimize(line);
  }
}
BENCHMARK(print_full_line);

void hash_full_key(benchmark::State& state) {
  const kd::GemmKey key = must_parse(kFullLine);
  for (auto _ : state) {
    std::uint64_t h = key.hash();
    benchmark::DoNotOptimize(h);
  }
}
BENCHMARK(hash_full_key);

}  // namespace

BENCHMARK_MAIN();
