// A small zlib (RFC 1950) compressor for kdctl's PNG charts: LZ77 over a 32 KiB window with hash
// chains, coded as one deflate block with the fixed Huffman codes (RFC 1951, 3.2.6). Charts are
// mostly runs of one colour, which fixed codes and 258-byte matches shrink about a hundredfold;
// the project's dependency list has no zlib, and nothing else in kdispatch needs one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kd::kdctl {

// The zlib stream (header, one final fixed-Huffman block, Adler-32) of `raw`.
std::string zlib_compress(std::string_view raw);

// Adler-32 of `data` (the zlib trailer's checksum).
std::uint32_t adler32(std::string_view data);

}  // namespace kd::kdctl
