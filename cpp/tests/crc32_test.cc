// CRC-32 of message data: the folding path agrees with zlib's for every length, start
// alignment and chaining, so a value checked here is the one the Java client sends.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>

#include "codec/crc32.h"

namespace tubemq::codec {
namespace {

uint32_t Zlib(uint32_t crc, std::string_view data) {
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 generator(seed);
  std::string bytes(size, '\0');
  for (char& byte : bytes) byte = static_cast<char>(generator() & 0xFF);
  return bytes;
}

TEST(Crc32, TheCheckValueOfTheStandard) {
  EXPECT_EQ(Crc32(0, "123456789"), 0xCBF43926u);
  EXPECT_EQ(Crc32(0, ""), 0u);
}

TEST(Crc32, AgreesWithZlibForEveryLengthAndAlignment) {
  const std::string bytes = RandomBytes(4096 + 64, 7);
  for (size_t start = 0; start < 16; ++start) {
    for (size_t size = 0; size <= 1100; ++size) {
      const std::string_view data(bytes.data() + start, size);
      ASSERT_EQ(Crc32(0, data), Zlib(0, data)) << "start " << start << ", size " << size;
    }
  }
  const std::string_view large(bytes.data() + 3, 4096 + 61);
  EXPECT_EQ(Crc32(0, large), Zlib(0, large));
}

TEST(Crc32, ChainsLikeZlib) {
  const std::string bytes = RandomBytes(3000, 11);
  const std::string_view all(bytes);
  for (size_t cut : {0u, 1u, 63u, 64u, 65u, 200u, 1500u, 2999u, 3000u}) {
    const uint32_t first = Crc32(0, all.substr(0, cut));
    EXPECT_EQ(Crc32(first, all.substr(cut)), Zlib(0, all)) << "cut at " << cut;
    EXPECT_EQ(Crc32(0x12345678u, all.substr(cut)), Zlib(0x12345678u, all.substr(cut)));
  }
}

TEST(Crc32, SeesEveryFlippedBit) {
  std::string bytes = RandomBytes(257, 3);
  const uint32_t clean = Crc32(0, bytes);
  for (size_t bit = 0; bit < bytes.size() * 8; bit += 13) {
    bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_NE(Crc32(0, bytes), clean) << "bit " << bit;
    bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
  }
}

}  // namespace
}  // namespace tubemq::codec
