// Byte helpers for tests: spec vectors are written as hex strings, as in protocol.md §10.
#pragma once

#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tubemq::testing {

// "FF 7F f4fe" -> the bytes; spaces are ignored.
inline std::string FromHex(std::string_view hex) {
  std::string out;
  int high = -1;
  for (char c : hex) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    const int value = std::isdigit(static_cast<unsigned char>(c))
                          ? c - '0'
                          : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    if (value < 0 || value > 15) throw std::invalid_argument("bad hex digit");
    if (high < 0) {
      high = value;
    } else {
      out.push_back(static_cast<char>(high * 16 + value));
      high = -1;
    }
  }
  if (high >= 0) throw std::invalid_argument("odd number of hex digits");
  return out;
}

// The bytes as "FF 7F F4 FE", for readable assertion failures.
inline std::string ToHex(std::string_view bytes) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out.push_back(' ');
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

inline const uint8_t* Bytes(const std::string& text) {
  return reinterpret_cast<const uint8_t*>(text.data());
}

}  // namespace tubemq::testing
