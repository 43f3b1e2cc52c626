#include "eval/cublaslt_enumeration.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "cublaslt/matmul.hpp"

namespace kd::cublaslt {
namespace {

// Reduction schemes in the order they are tried; output_type last and only as a last resort.
constexpr std::uint32_t kSchemes[] = {CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, CUBLASLT_REDUCTION_SCHEME_INPLACE};

struct Ranked {
  cublasLtMatmulAlgo_t algo;
  int rank;  // 1-based heuristic rank
  float waves;
};

class Enumerator {
public:
  Enumerator(const GemmKey& key, const EnumerationOptions& options)
      : key_(key), options_(options), lt_(loaded_cublaslt()), handle_(lt_), matmul_(lt_, key) {
    out_.version = static_cast<int>(lt_.version);
  }

  Enumeration run() {
    const std::vector<Ranked> ranked = heuristic();
    for (const Ranked& r : ranked) add(r.algo, r.waves, fmt::format("heuristic #{}", r.rank));
    add_splitk_variants(ranked);
    if (static_cast<int>(out_.algos.size()) > options_.max_candidates)
      out_.algos.resize(static_cast<std::size_t>(std::max(0, options_.max_candidates)));
    return std::move(out_);
  }

private:
  std::vector<Ranked> heuristic() {
    cublasLtMatmulPreference_t raw = nullptr;
    KD_LT_CHECK(lt_.cublasLtMatmulPreferenceCreate(&raw), "matmul preference");
    const std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter> pref(raw, PreferenceDeleter{&lt_});
    const std::uint64_t ws = options_.max_workspace_bytes;
    KD_LT_CHECK(lt_.cublasLtMatmulPreferenceSetAttribute(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                         sizeof(ws)),
                "matmul preference");
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(std::max(1, options_.heuristics)));
    int found = 0;
    const cublasStatus_t st = lt_.cublasLtMatmulAlgoGetHeuristic(
        handle_.get(), matmul_.desc(), matmul_.a(), matmul_.b(), matmul_.c(), matmul_.c(), raw,
        static_cast<int>(results.size()), results.data(), &found);
    // NOT_SUPPORTED: no algorithm at all for this combination. An empty answer, not an error.
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) return {};
    KD_LT_CHECK(st, key_.shape_line());
    std::vector<Ranked> out;
    for (int i = 0; i < found; ++i)
      if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
        out.push_back({results[static_cast<std::size_t>(i)].algo, i + 1, results[static_cast<std::size_t>(i)].wavesCount});
    return out;
  }

  // Split-K variants of the best `splitk_algos` distinct configurations that support split-K.
  void add_splitk_variants(const std::vector<Ranked>& ranked) {
    std::vector<const Ranked*> bases;
    std::set<std::tuple<std::int32_t, std::uint32_t, std::uint32_t, std::uint16_t, std::uint32_t>> configs;
    for (const Ranked& r : ranked) {
      if (static_cast<int>(bases.size()) >= options_.splitk_algos) break;
      std::int32_t splitk_support = 0;
      std::size_t written = 0;
      if (lt_.cublasLtMatmulAlgoCapGetAttribute(&r.algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitk_support,
                                                sizeof(splitk_support), &written) != CUBLAS_STATUS_SUCCESS ||
          splitk_support == 0)
        continue;
      const AlgoConfig c = read_algo_config(lt_, r.algo);
      if (!configs.insert({c.id, c.tile, c.stages, c.cluster_shape, c.custom}).second) continue;
      bases.push_back(&r);
    }
    for (const int split : options_.splits) {
      if (split < 2 || key_.k / split < kMinSplitDepth) continue;
      for (const Ranked* base : bases) {
        std::uint32_t mask = 0;
        std::size_t written = 0;
        if (lt_.cublasLtMatmulAlgoCapGetAttribute(&base->algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &mask,
                                                  sizeof(mask), &written) != CUBLAS_STATUS_SUCCESS)
          continue;
        bool any = false;
        for (const std::uint32_t scheme : kSchemes)
          if ((mask & scheme) != 0) any |= try_variant(*base, split, scheme);
        if (!any && (mask & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE) != 0)
          try_variant(*base, split, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
      }
    }
  }

  bool try_variant(const Ranked& base, int split, std::uint32_t scheme) {
    cublasLtMatmulAlgo_t algo = base.algo;
    const std::int32_t splits = split;
    if (lt_.cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof(splits)) !=
            CUBLAS_STATUS_SUCCESS ||
        lt_.cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                                 sizeof(scheme)) != CUBLAS_STATUS_SUCCESS)
      return false;
    return add(algo, 0, fmt::format("split-K {} of heuristic #{}", split, base.rank));
  }

  // Checks `algo` for the key and appends it unless its bytes are known; true when appended.
  bool add(const cublasLtMatmulAlgo_t& algo, float waves, std::string origin) {
    cublasLtMatmulHeuristicResult_t check{};
    if (lt_.cublasLtMatmulAlgoCheck(handle_.get(), matmul_.desc(), matmul_.a(), matmul_.b(), matmul_.c(),
                                    matmul_.c(), &algo, &check) != CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize > options_.max_workspace_bytes)
      return false;
    std::string bytes = algo_bytes(algo);
    if (!seen_.insert(bytes).second) return false;
    AlgoCandidate c;
    c.algo = {std::move(bytes), check.workspaceSize, out_.version};
    c.description = describe(read_algo_config(lt_, algo));
    c.origin = std::move(origin);
    c.waves = waves != 0 ? waves : check.wavesCount;
    out_.algos.push_back(std::move(c));
    return true;
  }

  struct PreferenceDeleter {
    const CublasLtLibrary* lt;
    void operator()(cublasLtMatmulPreference_t p) const noexcept { lt->cublasLtMatmulPreferenceDestroy(p); }
  };

  const GemmKey& key_;
  const EnumerationOptions& options_;
  const CublasLtLibrary& lt_;
  LtHandle handle_;
  LtMatmul matmul_;
  std::set<std::string> seen_;
  Enumeration out_;
};

}  // namespace

Enumeration enumerate_algos(const GemmKey& key, const EnumerationOptions& options) {
  return Enumerator(key, options).run();
}

}  // namespace kd::cublaslt
