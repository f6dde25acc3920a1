// Writing frames (protocol.md §1.2, §1.4; conformance checklist §10 items 1-5).
// Reading them back is in frame_reader_test.cc.
#include <gtest/gtest.h>

#include <climits>

#include "codec/big_endian.h"
#include "codec/frame_codec.h"
#include "test_bytes.h"

namespace tubemq::codec {
namespace {

using testing::Bytes;
using testing::ToHex;

TEST(FrameCodec, HeaderIsTokenSerialAndBlockCount) {
  const std::string frame = EncodeFrame(0x01020304, "abc");
  EXPECT_EQ(ToHex(frame.substr(0, 16)), "FF 7F F4 FE 01 02 03 04 00 00 00 01 00 00 00 03");
  EXPECT_EQ(frame.substr(16), "abc");
  EXPECT_EQ(frame.size(), 19u);
}

TEST(FrameCodec, PayloadOf20000BytesIsSplitIntoThreeBlocks) {
  const std::string payload(20000, 'x');
  const std::string frame = EncodeFrame(1, payload);
  EXPECT_EQ(ToHex(frame.substr(8, 4)), "00 00 00 03");
  EXPECT_EQ(ToHex(frame.substr(12, 4)), "00 00 20 00");
  EXPECT_EQ(ToHex(frame.substr(12 + 4 + 8192, 4)), "00 00 20 00");
  EXPECT_EQ(ToHex(frame.substr(12 + 2 * (4 + 8192), 4)), "00 00 0E 20");
  EXPECT_EQ(frame.size(), 12u + 3 * 4 + 20000);
}

TEST(FrameCodec, BlockCountIsCeilingAndNeverZero) {
  for (size_t size : {size_t{1}, size_t{8191}, size_t{8192}, size_t{8193}, size_t{16384}}) {
    const std::string frame = EncodeFrame(1, std::string(size, 'y'));
    const uint32_t blocks = (static_cast<uint8_t>(frame[10]) << 8) | static_cast<uint8_t>(frame[11]);
    EXPECT_EQ(blocks, (size + 8191) / 8192) << size;
  }
}

TEST(FrameCodec, FrameStartsWithTheTokenNotALength) {
  EXPECT_EQ(ToHex(EncodeFrame(9, "p").substr(0, 4)), "FF 7F F4 FE");
}

TEST(FrameCodec, PatchSerialRewritesBytesFourToSeven) {
  std::string frame = EncodeFrame(0, "payload");
  PatchFrameSerial(frame, -2);
  EXPECT_EQ(ToHex(frame.substr(4, 4)), "FF FF FF FE");
}

TEST(FrameCodec, EveryBlockHoldsOneToEightKilobytesAndTheyAddUpToThePayload) {
  // §1.4: every block but the last is exactly 8192 bytes; none is empty or larger.
  for (size_t size : {size_t{1}, size_t{100}, size_t{8191}, size_t{8192}, size_t{8193},
                      size_t{16384}, size_t{20000}, size_t{65536 + 7}}) {
    std::string payload(size, '\0');
    for (size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(i * 7);
    const std::string frame = EncodeFrame(3, payload);
    const uint32_t blocks = GetUint32(Bytes(frame) + 8);
    ASSERT_EQ(blocks, (size + 8191) / 8192) << size;
    size_t at = 12;
    std::string joined;
    for (uint32_t i = 0; i < blocks; ++i) {
      const uint32_t length = GetUint32(Bytes(frame) + at);
      EXPECT_GE(length, 1u);
      EXPECT_LE(length, 8192u);
      if (i + 1 < blocks) EXPECT_EQ(length, 8192u) << size;
      joined.append(frame, at + 4, length);
      at += 4 + length;
    }
    EXPECT_EQ(at, frame.size()) << "no trailer after the last block";
    EXPECT_EQ(joined, payload);
  }
}

TEST(FrameCodec, SerialIsBigEndianTwosComplement) {
  EXPECT_EQ(ToHex(EncodeFrame(1, "p").substr(4, 4)), "00 00 00 01");
  EXPECT_EQ(ToHex(EncodeFrame(-8391426, "p").substr(4, 4)), "FF 7F F4 FE");
  EXPECT_EQ(ToHex(EncodeFrame(INT32_MIN, "p").substr(4, 4)), "80 00 00 00");
  EXPECT_EQ(ToHex(EncodeFrame(INT32_MAX, "p").substr(4, 4)), "7F FF FF FF");
}

TEST(FrameCodec, PatchingTheSerialChangesNothingElse) {
  const std::string payload(9000, 'k');
  std::string patched = EncodeFrame(0, payload);
  PatchFrameSerial(patched, 0x7A0B0C0D);
  EXPECT_EQ(patched, EncodeFrame(0x7A0B0C0D, payload));
}

}  // namespace
}  // namespace tubemq::codec
