// Snappy's raw block format (a varint length, then literal and copy elements), the only
// compression InLongMsg uses. Written here rather than linked: the decoder must bound
// every length and offset itself (inputs come from the network), and the encoder only
// needs to produce valid blocks, not small ones.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tubemq::inlong {

// Decompresses `input` into `out`. Fails (returns false, with a reason) on a bad varint,
// an element that runs past the input, a copy with offset 0 or reaching before the
// output's start, an output whose size differs from the declared one, or a declared
// size above `max_size`.
bool SnappyDecompress(std::string_view input, size_t max_size, std::string& out,
                      std::string& reason);

// A valid raw block holding `input` as literals: every Snappy decoder reads it, which is
// all interoperability needs (Java compresses its own packs when it builds them).
std::string SnappyCompressLiteral(std::string_view input);

}  // namespace tubemq::inlong
