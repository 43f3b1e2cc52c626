// The PNG chart of kdctl bench, drawn with a built-in 5x7 font and encoded by libpng. One row per
// shape, labelled: the speedup over the baseline (cuBLAS for a GEMM, the framework's kernel for a row
// operator) in the serving regime as a bar with its value (the isolated regime's as a thin bar under
// it), and the fraction of a streaming read's bandwidth reached by the tuned kernel and by the
// baseline (serving regime).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kd::kdctl {

struct ChartBar {
  std::string label;             // the shape, e.g. "bf16 T 4096x16x4096"
  double speedup = 0;            // serving regime: baseline time / time of what runs now (0: not measured)
  bool tuned = false;            // a tuned kernel runs (false: the baseline is kept, speedup 1)
  double stream_frac = 0;        // streaming-read time / time of what runs now, 0..1 (0: unknown)
  double stream_cublas = 0;      // streaming-read time / the baseline's time, 0..1 (0: unknown)
  double speedup_isolated = 0;   // the speedup in the isolated regime (0: not measured)
};

// Writes an RGB PNG with a title line (e.g. the GPU), one labelled row per bar, tick marks and a
// legend naming `baseline` (what the speedups are over: "cuBLAS", "the framework kernel", "the
// baseline"). Throws kd::Error when libpng cannot encode it or the file cannot be written.
void write_bar_chart(const std::filesystem::path& file, const std::vector<ChartBar>& bars,
                     const std::string& title = "kdctl bench", const std::string& baseline = "cuBLAS");

}  // namespace kd::kdctl
