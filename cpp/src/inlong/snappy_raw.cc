#include "inlong/snappy_raw.h"

#include <algorithm>

namespace tubemq::inlong {

bool SnappyDecompress(std::string_view input, size_t max_size, std::string& out,
                      std::string& reason) {
  size_t pos = 0;
  uint64_t declared = 0;
  // The length varint: at most 5 bytes for a 32-bit value.
  for (int shift = 0;; shift += 7) {
    if (pos >= input.size() || shift > 28) {
      reason = "bad length varint";
      return false;
    }
    const uint8_t byte = static_cast<uint8_t>(input[pos++]);
    declared |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) break;
  }
  if (declared > max_size) {
    reason = "declared size " + std::to_string(declared) + " exceeds the cap of " +
             std::to_string(max_size);
    return false;
  }
  out.clear();
  out.reserve(static_cast<size_t>(declared));  // bounded by max_size above
  while (pos < input.size()) {
    const uint8_t tag = static_cast<uint8_t>(input[pos++]);
    const uint8_t kind = tag & 0x03;
    if (kind == 0) {  // literal
      uint64_t length = tag >> 2;
      if (length >= 60) {
        const size_t bytes = length - 59;  // 1..4 little-endian length bytes
        if (bytes > input.size() - pos) {
          reason = "literal length runs past the input";
          return false;
        }
        length = 0;
        for (size_t i = 0; i < bytes; ++i) {
          length |= static_cast<uint64_t>(static_cast<uint8_t>(input[pos + i])) << (8 * i);
        }
        pos += bytes;
      }
      length += 1;
      if (length > input.size() - pos) {
        reason = "literal runs past the input";
        return false;
      }
      if (length > declared - out.size()) {
        reason = "output larger than the declared size";
        return false;
      }
      out.append(input.data() + pos, static_cast<size_t>(length));
      pos += static_cast<size_t>(length);
      continue;
    }
    uint64_t length = 0;
    uint64_t offset = 0;
    if (kind == 1) {
      if (pos >= input.size()) {
        reason = "copy runs past the input";
        return false;
      }
      length = 4 + ((tag >> 2) & 0x07);
      offset = (static_cast<uint64_t>(tag >> 5) << 8) | static_cast<uint8_t>(input[pos]);
      pos += 1;
    } else {
      const size_t bytes = kind == 2 ? 2 : 4;
      if (bytes > input.size() - pos) {
        reason = "copy runs past the input";
        return false;
      }
      length = 1 + (tag >> 2);
      for (size_t i = 0; i < bytes; ++i) {
        offset |= static_cast<uint64_t>(static_cast<uint8_t>(input[pos + i])) << (8 * i);
      }
      pos += bytes;
    }
    if (offset == 0 || offset > out.size()) {
      reason = "copy offset " + std::to_string(offset) + " outside the output";
      return false;
    }
    if (length > declared - out.size()) {
      reason = "output larger than the declared size";
      return false;
    }
    // Byte by byte: a copy may overlap the bytes it produces (a run).
    const size_t from = out.size() - static_cast<size_t>(offset);
    for (uint64_t i = 0; i < length; ++i) out.push_back(out[from + static_cast<size_t>(i)]);
  }
  if (out.size() != declared) {
    reason = "output of " + std::to_string(out.size()) + " bytes, declared " +
             std::to_string(declared);
    return false;
  }
  return true;
}

std::string SnappyCompressLiteral(std::string_view input) {
  std::string out;
  uint64_t size = input.size();
  do {
    uint8_t byte = size & 0x7F;
    size >>= 7;
    if (size) byte |= 0x80;
    out.push_back(static_cast<char>(byte));
  } while (size);
  // Literals of at most 65536 bytes: tag 61 (two length bytes) covers them all.
  size_t pos = 0;
  while (pos < input.size()) {
    const size_t length = std::min<size_t>(65536, input.size() - pos);
    if (length <= 60) {
      out.push_back(static_cast<char>((length - 1) << 2));
    } else {
      out.push_back(static_cast<char>(61 << 2));
      out.push_back(static_cast<char>((length - 1) & 0xFF));
      out.push_back(static_cast<char>(((length - 1) >> 8) & 0xFF));
    }
    out.append(input.data() + pos, length);
    pos += length;
  }
  return out;
}

}  // namespace tubemq::inlong
