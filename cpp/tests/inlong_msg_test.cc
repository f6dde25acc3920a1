// InLongMsg decoding and encoding (inlongmsg.md); the Python tests hold the spec's worked
// examples and the Java interoperability checks, these the parts Python cannot reach.
#include <gtest/gtest.h>

#include "inlong/snappy_raw.h"
#include "tubemq/inlong_msg.h"

namespace tubemq::inlong {
namespace {

std::string Body(const Pack& pack, const Record& record) {
  const std::string_view block =
      record.block == 0 ? std::string_view() : std::string_view(pack.blocks[record.block - 1]);
  return std::string(block.substr(record.offset, record.length));
}

TEST(SnappyRaw, DecodesCopiesIncludingOverlappingRuns) {
  // "ab" as a literal, then a 1-byte-offset copy of length 4 from offset 2: "ababab".
  const std::string block = std::string("\x06\x04" "ab", 4) + std::string("\x01\x02", 2);
  std::string out, reason;
  ASSERT_TRUE(SnappyDecompress(block, 1024, out, reason)) << reason;
  EXPECT_EQ(out, "ababab");
  // An offset before the output's start, and a declared size above the cap.
  EXPECT_FALSE(SnappyDecompress(std::string("\x06\x04" "ab\x01\x03", 6), 1024, out, reason));
  EXPECT_FALSE(SnappyDecompress(std::string("\x06\x04" "ab\x01\x02", 6), 5, out, reason));
  // The literal-only encoder: every size class of literal reads back.
  for (size_t size : {0u, 1u, 60u, 61u, 300u, 70000u}) {
    const std::string plain(size, 'q');
    ASSERT_TRUE(SnappyDecompress(SnappyCompressLiteral(plain), 1 << 20, out, reason)) << size;
    EXPECT_EQ(out, plain);
  }
}

TEST(InLongMsg, EveryVersionRoundTripsStoredAndCompressed) {
  const std::string big(5000, 'z');
  for (int version = 1; version <= 4; ++version) {
    for (bool compress : {false, true}) {
      std::vector<EncodeRecord> records = {{"one", "seq=1"}, {big, "seq=2"}};
      EncodeOptions options;
      options.version = version;
      options.compress = compress;
      options.create_time_ms = 1700000000000;
      options.pack_attr = "g=1";
      std::string packed, problem;
      ASSERT_TRUE(Encode(records, options, packed, problem)) << problem;
      Pack pack;
      DecodeError error;
      ASSERT_TRUE(Decode(packed, DecodeOptions{}, pack, error)) << error.message;
      ASSERT_EQ(pack.records.size(), 2u);
      EXPECT_EQ(pack.version, version);
      EXPECT_EQ(*pack.create_time_ms, 1700000000000);
      for (size_t i = 0; i < 2; ++i) {
        const Record& record = pack.records[i];
        const std::string body = record.block == 0
                                     ? packed.substr(record.offset, record.length)
                                     : Body(pack, record);
        EXPECT_EQ(body, std::string(records[i].body)) << version << compress;
        EXPECT_EQ(record.attrs.at("seq"), std::to_string(i + 1));
      }
    }
  }
}

TEST(InLongMsg, ModifiedUtf8AttributesBecomeUtf8) {
  // A v1 group attribute with Java's NUL (C0 80) and a surrogate pair for U+1F600.
  const std::string attr = std::string("k=a\xC0\x80" "b\xED\xA0\xBD\xED\xB8\x80", 12);
  std::string pack = std::string("\x0F\x01", 2) + std::string(8, '\0') +
                     std::string("\x00\x00\x00\x01", 4) + std::string("\x00", 1) +
                     static_cast<char>(attr.size()) + attr +
                     std::string("\x00\x00\x00\x01\x00", 5) + std::string("\x0F\x01", 2);
  Pack decoded;
  DecodeError error;
  ASSERT_TRUE(Decode(pack, DecodeOptions{}, decoded, error)) << error.message;
  EXPECT_EQ(decoded.records.size(), 0u);  // an empty item list
  // And the encoder writes that form back for Java's readUTF.
  std::string out, problem;
  EncodeOptions options;
  ASSERT_TRUE(Encode({{"x", std::string("k=a\0b\xF0\x9F\x98\x80", 9)}}, options, out, problem));
  EXPECT_NE(out.find(attr), std::string::npos);
  ASSERT_TRUE(Decode(out, DecodeOptions{}, decoded, error)) << error.message;
  EXPECT_EQ(decoded.records.at(0).attrs.at("k"), std::string("a\0b\xF0\x9F\x98\x80", 7));
}

TEST(InLongMsg, CountsThatCannotFitAreRefusedBeforeAnyWork) {
  const std::string pack = std::string("\x0F\x01", 2) + std::string(8, '\0') +
                           std::string("\xFF\xFF\xFF\xFF", 4) + std::string("\x0F\x01", 2);
  Pack decoded;
  DecodeError error;
  EXPECT_FALSE(Decode(pack, DecodeOptions{}, decoded, error));
  EXPECT_EQ(error.kind, ErrorKind::kMalformed);
  EXPECT_EQ(error.offset, 10u);
  EXPECT_STREQ(ErrorKindName(error.kind), "malformed");
}

TEST(InLongMsg, AttributeErrorsPointIntoThePack) {
  // v3 records whose own attributes are malformed, after a long group attribute string:
  // the offset once counted the group string too, and inside a compressed group it ran
  // past the pack's end (found by the fuzzer; cpp/fuzz/corpus/inlong_v3_snappy_bad_record_attr).
  for (bool compress : {false, true}) {
    EncodeOptions options;
    options.version = 3;
    options.compress = compress;
    options.pack_attr = "m=0&iname=a-long-group-attribute-string-before-the-record";
    std::string packed, problem;
    ASSERT_TRUE(Encode({{"hello", "seq=1"}, {"world", "seq81"}}, options, packed, problem))
        << problem;
    Pack pack;
    DecodeError error;
    ASSERT_FALSE(Decode(packed, DecodeOptions{}, pack, error));
    EXPECT_EQ(error.kind, ErrorKind::kAttributeFormat) << compress;
    EXPECT_LT(error.offset, packed.size()) << compress;
    if (!compress) EXPECT_EQ(error.offset, packed.find("seq81"));
  }
  // A malformed group string is reported inside the group string.
  EncodeOptions options;
  options.version = 3;
  options.pack_attr = "m=0&broken";
  std::string packed, problem;
  ASSERT_TRUE(Encode({{"hello", "seq=1"}}, options, packed, problem)) << problem;
  Pack pack;
  DecodeError error;
  ASSERT_FALSE(Decode(packed, DecodeOptions{}, pack, error));
  EXPECT_EQ(error.offset, packed.find("broken"));
}

}  // namespace
}  // namespace tubemq::inlong
