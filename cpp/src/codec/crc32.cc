#include "codec/crc32.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TUBEMQ_CRC32_FOLDING 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace tubemq::codec {
namespace {

uint32_t Crc32Zlib(uint32_t crc, const unsigned char* bytes, size_t size) {
  uLong value = crc;
  // zlib takes uInt lengths: large buffers go in pieces.
  while (size > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(size, size_t{1} << 30));
    value = crc32(value, bytes, piece);
    bytes += piece;
    size -= piece;
  }
  return static_cast<uint32_t>(value);
}

#ifdef TUBEMQ_CRC32_FOLDING

// Short runs: eight bytes per step from eight tables, the register kept as is (not
// inverted, unlike zlib's value). Every message has such a run - all of a message under 64
// bytes, and after the folding the folded lane and the last size % 16 bytes - and zlib
// takes a byte per step there, which a profile of a 100 B backlog's reads showed as a fifth
// of the I/O thread's time. Little-endian loads, so on x86-64 only, like the folding.
using SliceTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr SliceTables MakeSliceTables() {
  SliceTables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t value = byte;
    for (int bit = 0; bit < 8; ++bit) value = (value >> 1) ^ (0xEDB88320u & (0u - (value & 1u)));
    tables[0][byte] = value;
  }
  // tables[k][b]: the register's change from byte b followed by k zero bytes.
  for (size_t k = 1; k < tables.size(); ++k) {
    for (size_t byte = 0; byte < 256; ++byte) {
      const uint32_t before = tables[k - 1][byte];
      tables[k][byte] = (before >> 8) ^ tables[0][before & 0xFFu];
    }
  }
  return tables;
}

constexpr SliceTables kSliceTables = MakeSliceTables();
static_assert(kSliceTables[0][1] == 0x77073096u, "the table of CRC-32 (IEEE)");

uint32_t LoadLittle32(const unsigned char* bytes) {
  uint32_t value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

uint32_t SliceBy8(uint32_t reg, const unsigned char* bytes, size_t size) {
  const SliceTables& t = kSliceTables;
  for (; size >= 8; bytes += 8, size -= 8) {
    const uint32_t low = reg ^ LoadLittle32(bytes);
    const uint32_t high = LoadLittle32(bytes + 4);
    reg = t[7][low & 0xFFu] ^ t[6][(low >> 8) & 0xFFu] ^ t[5][(low >> 16) & 0xFFu] ^
          t[4][low >> 24] ^ t[3][high & 0xFFu] ^ t[2][(high >> 8) & 0xFFu] ^
          t[1][(high >> 16) & 0xFFu] ^ t[0][high >> 24];
  }
  for (; size > 0; ++bytes, --size) reg = (reg >> 8) ^ t[0][(reg ^ *bytes) & 0xFFu];
  return reg;
}

// Folding (the carry-less multiplication method): a 128-bit lane of data, moved forward
// by d bits, keeps its remainder modulo the polynomial P if its low half (the earlier
// bits, in CRC-32's reflected order) is multiplied by x^(d+32) mod P and its high half by
// x^(d-32) mod P, each bit-reflected and shifted by one. The constants are computed here
// from P rather than written out.
constexpr uint64_t kPolynomial = 0x104C11DB7;  // x^32 + x^26 + ... + 1

constexpr uint32_t XPowerModP(unsigned power) {
  uint64_t remainder = 1;
  for (unsigned i = 0; i < power; ++i) {
    remainder <<= 1;
    if (remainder & (uint64_t{1} << 32)) remainder ^= kPolynomial;
  }
  return static_cast<uint32_t>(remainder);
}

constexpr uint32_t Reflect32(uint32_t value) {
  uint32_t out = 0;
  for (int bit = 0; bit < 32; ++bit) out |= ((value >> bit) & 1u) << (31 - bit);
  return out;
}

constexpr uint64_t FoldFactor(unsigned power) {
  return uint64_t{Reflect32(XPowerModP(power))} << 1;
}

// (low, high) factors of a fold by `bits`, as the two 64-bit halves of a register.
struct FoldFactors {
  uint64_t low;
  uint64_t high;
};
constexpr FoldFactors FoldBy(unsigned bits) {
  return {FoldFactor(bits + 32), FoldFactor(bits - 32)};
}
constexpr FoldFactors kFoldBy512 = FoldBy(512);  // four lanes at once
constexpr FoldFactors kFoldBy128 = FoldBy(128);  // one lane
static_assert(FoldFactor(544) == 0x154442BD4, "the fold factors are those of CRC-32 (IEEE)");

__attribute__((target("pclmul,sse2"))) inline __m128i Fold(__m128i lane, __m128i factors,
                                                            __m128i next) {
  const __m128i low = _mm_clmulepi64_si128(lane, factors, 0x00);
  const __m128i high = _mm_clmulepi64_si128(lane, factors, 0x11);
  return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

__attribute__((target("pclmul,sse2"))) inline __m128i Load(const unsigned char* bytes) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
}

// At least 64 bytes: folds them down to one 16-byte lane with the same remainder, then
// finishes over that lane and the last size % 16 bytes eight bytes at a time.
__attribute__((target("pclmul,sse2"))) uint32_t Crc32Folding(uint32_t crc,
                                                             const unsigned char* bytes,
                                                             size_t size) {
  const __m128i by512 = _mm_set_epi64x(static_cast<long long>(kFoldBy512.high),
                                       static_cast<long long>(kFoldBy512.low));
  const __m128i by128 = _mm_set_epi64x(static_cast<long long>(kFoldBy128.high),
                                       static_cast<long long>(kFoldBy128.low));
  // zlib's value is the inverted register: the register goes into the first 4 bytes.
  __m128i lane0 = _mm_xor_si128(Load(bytes), _mm_cvtsi32_si128(static_cast<int>(~crc)));
  __m128i lane1 = Load(bytes + 16);
  __m128i lane2 = Load(bytes + 32);
  __m128i lane3 = Load(bytes + 48);
  bytes += 64;
  size -= 64;
  for (; size >= 64; bytes += 64, size -= 64) {
    lane0 = Fold(lane0, by512, Load(bytes));
    lane1 = Fold(lane1, by512, Load(bytes + 16));
    lane2 = Fold(lane2, by512, Load(bytes + 32));
    lane3 = Fold(lane3, by512, Load(bytes + 48));
  }
  __m128i lane = Fold(Fold(Fold(lane0, by128, lane1), by128, lane2), by128, lane3);
  for (; size >= 16; bytes += 16, size -= 16) lane = Fold(lane, by128, Load(bytes));
  alignas(16) unsigned char folded[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(folded), lane);
  // The register is all in `folded` now: the rest starts from a zero register.
  return ~SliceBy8(SliceBy8(0, folded, sizeof folded), bytes, size);
}

// From CPUID itself (SSE2 is in every x86-64): __builtin_cpu_supports needs a runtime
// symbol that not every toolchain's runtime library has (the Zig wheels' clang).
bool CanFold() {
  static const bool can = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_PCLMUL) != 0;
  }();
  return can;
}

#endif  // TUBEMQ_CRC32_FOLDING

}  // namespace

uint32_t Crc32(uint32_t crc, std::string_view data) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
#ifdef TUBEMQ_CRC32_FOLDING
  // Below 64 bytes the folding's set-up costs more than the tables take.
  if (data.size() < 64) return ~SliceBy8(~crc, bytes, data.size());
  if (CanFold()) return Crc32Folding(crc, bytes, data.size());
#endif
  return Crc32Zlib(crc, bytes, data.size());
}

}  // namespace tubemq::codec
