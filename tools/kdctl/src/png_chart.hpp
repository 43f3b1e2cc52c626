// A minimal PNG writer for kdctl bench's chart: grouped bars per shape (speedup over cuBLAS and
// fraction of the roofline floor), no text (the table next to it names the shapes in order).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kd::kdctl {

struct ChartBar {
  double speedup = 0;         // cuBLAS time / tuned time (0: no tuned kernel)
  double roofline_frac = 0;   // floor / best time, 0..1
};

// Writes an RGB PNG: per shape a blue bar (speedup, scale 0..max(2, max speedup)) and an orange
// bar (roofline fraction, scale 0..1), a grey line at speedup 1.0. Throws kd::Error on I/O errors.
void write_bar_chart(const std::filesystem::path& file, const std::vector<ChartBar>& bars);

}  // namespace kd::kdctl
