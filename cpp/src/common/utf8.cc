#include "tubemq/utf8.h"

#include <cstdint>
#include <cstring>

namespace tubemq {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The sequence starting at `at` (at least one byte): `valid` tells whether it is
// well-formed, `length` how many bytes it spans. For an ill-formed one that is its
// maximal subpart: the longest prefix of some well-formed sequence, or 1 byte.
struct Sequence {
  bool valid;
  size_t length;
};

Sequence Next(const unsigned char* at, size_t left) {
  const unsigned char lead = at[0];
  if (lead < 0x80) return {true, 1};
  size_t length = 0;
  // The second byte's range depends on the lead (table 3-7); later bytes are 80..BF.
  unsigned char low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return {false, 1};  // a continuation byte, C0, C1 or F5..FF cannot start anything
  }
  if (left < 2 || at[1] < low || at[1] > high) return {false, 1};
  for (size_t index = 2; index < length; ++index) {
    if (index >= left || at[index] < 0x80 || at[index] > 0xBF) return {false, index};
  }
  return {true, length};
}

// Bytes of ASCII at the start of [at, at + left): eight at a time while it lasts, since
// most attribute text is ASCII.
size_t AsciiRun(const unsigned char* at, size_t left) {
  size_t done = 0;
  while (left - done >= 8) {
    uint64_t word;
    std::memcpy(&word, at + done, sizeof word);
    if ((word & 0x8080808080808080ULL) != 0) break;
    done += 8;
  }
  while (done < left && at[done] < 0x80) ++done;
  return done;
}

}  // namespace

size_t ValidUtf8Prefix(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  size_t at = 0;
  while (at < text.size()) {
    at += AsciiRun(bytes + at, text.size() - at);
    if (at == text.size()) break;
    const Sequence sequence = Next(bytes + at, text.size() - at);
    if (!sequence.valid) break;
    at += sequence.length;
  }
  return at;
}

void AppendUtf8Replacing(std::string_view text, std::string& out) {
  for (;;) {
    // A well-formed run goes in with one append; then one U+FFFD per bad subpart.
    const size_t good = ValidUtf8Prefix(text);
    out.append(text.data(), good);
    if (good == text.size()) return;
    text.remove_prefix(good);
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    out.append(kReplacement);
    text.remove_prefix(Next(bytes, text.size()).length);
  }
}

}  // namespace tubemq
