// UTF-8 checks for network text (tubemq/utf8.h). The expected replacements are what
// Python's bytes.decode("utf-8", "replace") gives for the same bytes, so the Arrow
// columns the Spark source builds in C++ show the text Python shows.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "tubemq/utf8.h"

namespace tubemq {
namespace {

std::string Replaced(std::string_view text) {
  std::string out = "<";  // appends: what was there stays
  AppendUtf8Replacing(text, out);
  return out.substr(1);
}

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, WellFormedTextIsKeptAsItIs) {
  for (std::string_view text :
       {std::string_view(""), std::string_view("plain ascii, longer than one word"),
        std::string_view("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80"),
        std::string_view("\xF4\x8F\xBF\xBF"),  // U+10FFFF, the last code point
        std::string_view("\x00 nul inside", 12)}) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
    EXPECT_EQ(ValidUtf8Prefix(text), text.size());
    EXPECT_EQ(Replaced(text), text);
  }
}

TEST(Utf8, EachMaximalSubpartBecomesOneReplacementAsInPython) {
  const struct {
    std::string_view in;
    std::string out;
  } table[] = {
      // GBK "中文": D6 and CE start two-byte sequences, D0 and C4 do not continue them.
      {"\xD6\xD0\xCE\xC4", kFffd + kFffd + kFffd + kFffd},
      {"\xFF", kFffd},
      {"\x80" "abc", kFffd + "abc"},
      {"\xC0\xAF", kFffd + kFffd},                  // overlong '/'
      {"\xE0\x80\xAF", kFffd + kFffd + kFffd},      // overlong, E0 needs A0..BF next
      {"\xED\xA0\x80", kFffd + kFffd + kFffd},      // a UTF-16 surrogate
      {"\xF4\x90\x80\x80", kFffd + kFffd + kFffd + kFffd},  // above U+10FFFF
      {"\xF5", kFffd},
      {"\xE2\x82", kFffd},                          // truncated: one subpart
      {"\xF0\x9F\x98", kFffd},
      {"a\xE2\x82" "b", "a" + kFffd + "b"},
      {"\xF0\x9F\x98\x80\xF0", "\xF0\x9F\x98\x80" + kFffd},
      {"\xC3", kFffd},
      {"\xC3(", kFffd + "("},
      {"\xE6\x96\x87\xB0", "\xE6\x96\x87" + kFffd},
      {"0123456789abcdef\xB0tail", "0123456789abcdef" + kFffd + "tail"},
  };
  for (const auto& row : table) {
    EXPECT_FALSE(IsValidUtf8(row.in)) << testing::PrintToString(row.in);
    EXPECT_EQ(Replaced(row.in), row.out) << testing::PrintToString(row.in);
    EXPECT_TRUE(IsValidUtf8(Replaced(row.in)));
  }
  EXPECT_EQ(ValidUtf8Prefix("0123456789abcdef\xB0tail"), 16u);
  EXPECT_EQ(ValidUtf8Prefix("\xE6\x96\x87\xB0"), 3u);
}

// A plain decoder, written from the definition (code point ranges), to check the
// table-driven one on every sequence of up to three bytes and on four-byte ones.
bool WellFormedByDefinition(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    const auto lead = static_cast<uint8_t>(text[at]);
    size_t length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (length == 0 || lead > 0xF7 || at + length > text.size()) return false;
    uint32_t point = length == 1 ? lead : lead & (0xFF >> (length + 1));
    for (size_t index = 1; index < length; ++index) {
      const auto next = static_cast<uint8_t>(text[at + index]);
      if ((next & 0xC0) != 0x80) return false;
      point = (point << 6) | (next & 0x3F);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < smallest[length] || point > 0x10FFFF) return false;
    if (point >= 0xD800 && point <= 0xDFFF) return false;
    at += length;
  }
  return true;
}

TEST(Utf8, AgreesWithTheDefinitionOnShortSequences) {
  std::string text;
  for (int a = 0; a < 256; ++a) {
    text.assign(1, static_cast<char>(a));
    ASSERT_EQ(IsValidUtf8(text), WellFormedByDefinition(text)) << a;
    for (int b = 0; b < 256; ++b) {
      text.assign({static_cast<char>(a), static_cast<char>(b)});
      ASSERT_EQ(IsValidUtf8(text), WellFormedByDefinition(text)) << a << " " << b;
      if (a < 0xE0 || a > 0xF4) continue;
      for (int c = 0; c < 256; c += (a >= 0xF0 ? 7 : 1)) {
        text.assign({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)});
        ASSERT_EQ(IsValidUtf8(text), WellFormedByDefinition(text)) << a << " " << b << " " << c;
        if (a >= 0xF0) {
          for (int d : {0x00, 0x7F, 0x80, 0xA5, 0xBF, 0xC0}) {
            text.push_back(static_cast<char>(d));
            ASSERT_EQ(IsValidUtf8(text), WellFormedByDefinition(text))
                << a << " " << b << " " << c << " " << d;
            text.pop_back();
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tubemq
