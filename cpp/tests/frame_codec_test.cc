// The frame format (protocol.md §1) and the conformance checklist items about framing
// (§10 items 1-5 and 25).
#include <gtest/gtest.h>

#include <random>

#include "codec/frame_codec.h"
#include "test_bytes.h"

namespace tubemq::codec {
namespace {

using testing::Bytes;
using testing::FromHex;
using testing::ToHex;

std::vector<Frame> FeedAll(FrameReader& reader, const std::string& bytes, Status* status) {
  std::vector<Frame> frames;
  *status = reader.Feed(Bytes(bytes), bytes.size(), frames);
  return frames;
}

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

TEST(FrameReader, ReassemblesAFrameFedByteByByte) {
  const std::string payload(20000, 'z');
  const std::string frame = EncodeFrame(77, payload);
  FrameReader reader;
  std::vector<Frame> frames;
  for (size_t i = 0; i < frame.size(); ++i) {
    ASSERT_TRUE(reader.Feed(Bytes(frame) + i, 1, frames).ok());
    if (i + 1 < frame.size()) {
      EXPECT_TRUE(frames.empty());
      EXPECT_TRUE(reader.InsideFrame());
    }
  }
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].serial, 77);
  EXPECT_EQ(frames[0].payload, payload);
  EXPECT_FALSE(reader.InsideFrame());
}

TEST(FrameReader, ReassemblesManyFramesOverRandomChunking) {
  std::mt19937 random(12345);
  std::string stream;
  std::vector<std::string> payloads;
  for (int i = 0; i < 50; ++i) {
    payloads.push_back(std::string(random() % 30000 + 1, static_cast<char>('a' + i % 26)));
    stream += EncodeFrame(i, payloads.back());
  }
  for (int round = 0; round < 20; ++round) {
    FrameReader reader;
    std::vector<Frame> frames;
    size_t at = 0;
    while (at < stream.size()) {
      const size_t chunk = std::min<size_t>(stream.size() - at, random() % 9000 + 1);
      ASSERT_TRUE(reader.Feed(Bytes(stream) + at, chunk, frames).ok());
      at += chunk;
    }
    ASSERT_EQ(frames.size(), payloads.size());
    for (size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(frames[i].serial, static_cast<int32_t>(i));
      EXPECT_EQ(frames[i].payload, payloads[i]);
    }
  }
}

TEST(FrameReader, ManyFramesInOneChunk) {
  const std::string stream = EncodeFrame(1, "one") + EncodeFrame(2, "two") + EncodeFrame(3, "3");
  FrameReader reader;
  Status status;
  auto frames = FeedAll(reader, stream, &status);
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[1].payload, "two");
}

TEST(FrameReader, BadBeginTokenIsAProtocolErrorAndTheReaderStaysFailed) {
  FrameReader reader;
  Status status;
  FeedAll(reader, FromHex("FF 7F F4 FF 00 00 00 01 00 00 00 01"), &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
  EXPECT_NE(status.message().find("token"), std::string::npos) << status.message();
  // Even a valid frame afterwards is refused: the stream cannot be trusted any more.
  auto frames = FeedAll(reader, EncodeFrame(1, "ok"), &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
  EXPECT_TRUE(frames.empty());
}

TEST(FrameReader, TooManyBlocksIsRefusedBeforeAnyAllocation) {
  FrameReader reader;
  Status status;
  // 3585 blocks: one more than the Java limit.
  FeedAll(reader, FromHex("FF 7F F4 FE 00 00 00 01 00 00 0E 01"), &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
}

TEST(FrameReader, ZeroBlocksIsAnEmptyPayloadAsInJava) {
  // Java accepts listSize 0; the empty payload then fails the envelope parse instead.
  FrameReader reader;
  Status status;
  auto frames = FeedAll(reader, FromHex("FF 7F F4 FE 00 00 00 09 00 00 00 00"), &status);
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].serial, 9);
  EXPECT_TRUE(frames[0].payload.empty());
}

TEST(FrameReader, AbsurdBlockLengthIsRefused) {
  FrameReader reader;
  Status status;
  FeedAll(reader, FromHex("FF 7F F4 FE 00 00 00 01 00 00 00 01 7F FF FF FF"), &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
}

TEST(FrameReader, PayloadOverTheConfiguredLimitIsRefused) {
  FrameLimits limits;
  limits.max_payload_size = 100;
  FrameReader reader(limits);
  Status status;
  FeedAll(reader, EncodeFrame(1, std::string(101, 'q')), &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
}

TEST(FrameReader, FramesBeforeAnErrorAreStillDelivered) {
  FrameReader reader;
  Status status;
  auto frames = FeedAll(reader, EncodeFrame(5, "good") + "garbage-bytes-here", &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, "good");
}

}  // namespace
}  // namespace tubemq::codec
