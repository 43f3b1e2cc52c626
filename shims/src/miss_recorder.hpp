// KD_RECORD=FILE: the prewarm list of a real run. Each distinct missed key line is appended to FILE
// once; lines already in FILE when the process first records are not appended again, so repeated
// runs grow the list only by new shapes.
#pragma once

#include "kdispatch/kdispatch.h"

namespace kd::shim {

// Appends the shape line of `desc` (kd_gemm_desc_key_line) and a newline to the KD_RECORD file
// unless this process already recorded it or the file already held it. No-op without KD_RECORD.
// Thread-safe; never throws (an unwritable file disables recording for the process, with one
// message on stderr). One write() per line on an O_APPEND descriptor, so processes sharing a file
// do not interleave lines.
void record_miss(const kd_gemm_desc& desc) noexcept;

}  // namespace kd::shim
