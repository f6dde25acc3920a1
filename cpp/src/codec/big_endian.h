// Big-endian (network order) 32-bit integers: the frame header, block lengths and
// the attribute-length prefix of message data all use them.
#pragma once

#include <cstdint>

namespace tubemq::codec {

inline char* PutUint32(char* out, uint32_t value) {
  out[0] = static_cast<char>(value >> 24);
  out[1] = static_cast<char>(value >> 16);
  out[2] = static_cast<char>(value >> 8);
  out[3] = static_cast<char>(value);
  return out + 4;
}

inline uint32_t GetUint32(const uint8_t* in) {
  return (uint32_t{in[0]} << 24) | (uint32_t{in[1]} << 16) | (uint32_t{in[2]} << 8) |
         uint32_t{in[3]};
}

}  // namespace tubemq::codec
