// Reading frames (protocol.md §1.5, §1.6; conformance checklist §10 item 25): frames
// are reassembled whatever the TCP chunking, and a broken stream fails for good
// without the reader allocating what a hostile header announces.
#include <gtest/gtest.h>

#include <climits>
#include <random>

#include "codec/big_endian.h"
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

// A frame with exactly the given blocks, for layouts our writer never produces
// (small or empty blocks) but a reader must accept.
std::string FrameWithBlocks(int32_t serial, const std::vector<std::string>& blocks) {
  std::string frame(12, '\0');
  PutUint32(frame.data(), kFrameBeginToken);
  PutUint32(frame.data() + 4, static_cast<uint32_t>(serial));
  PutUint32(frame.data() + 8, static_cast<uint32_t>(blocks.size()));
  for (const std::string& block : blocks) {
    char length[4];
    PutUint32(length, static_cast<uint32_t>(block.size()));
    frame.append(length, 4);
    frame += block;
  }
  return frame;
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

TEST(FrameReader, SmallAndEmptyBlocksAreConcatenated) {
  // Block boundaries carry no meaning (§1.2); a zero-length block is tolerated on input.
  FrameReader reader;
  Status status;
  auto frames = FeedAll(reader, FrameWithBlocks(4, {"ab", "", "c", "def"}), &status);
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, "abcdef");
}

TEST(FrameReader, EverySplitPointOfAStreamGivesTheSameFrames) {
  const std::string stream = FrameWithBlocks(1, {"first"}) +
                             FrameWithBlocks(-2, {"se", "", "cond"}) +
                             FrameWithBlocks(INT32_MAX, {std::string(40, 'x'), "y"});
  for (size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= stream.size(); ++cut2) {
      FrameReader reader;
      std::vector<Frame> frames;
      ASSERT_TRUE(reader.Feed(Bytes(stream), cut1, frames).ok());
      ASSERT_TRUE(reader.Feed(Bytes(stream) + cut1, cut2 - cut1, frames).ok());
      ASSERT_TRUE(reader.Feed(Bytes(stream) + cut2, stream.size() - cut2, frames).ok());
      ASSERT_EQ(frames.size(), 3u) << cut1 << "/" << cut2;
      EXPECT_EQ(frames[0].serial, 1);
      EXPECT_EQ(frames[0].payload, "first");
      EXPECT_EQ(frames[1].serial, -2);
      EXPECT_EQ(frames[1].payload, "second");
      EXPECT_EQ(frames[2].serial, INT32_MAX);
      EXPECT_EQ(frames[2].payload, std::string(40, 'x') + "y");
      EXPECT_FALSE(reader.InsideFrame());
    }
  }
}

TEST(FrameReader, SerialsRoundTripIncludingNegativeOnes) {
  for (int32_t serial : {0, 1, -1, INT32_MIN, INT32_MAX, -8391426}) {
    FrameReader reader;
    Status status;
    auto frames = FeedAll(reader, EncodeFrame(serial, "s"), &status);
    ASSERT_TRUE(status.ok());
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].serial, serial);
  }
}

TEST(FrameReader, ExactlyTheJavaBlockLimitIsAccepted) {
  // 3584 blocks is allowed (§1.6); only the header has arrived, so nothing is complete.
  FrameReader reader;
  Status status;
  auto frames = FeedAll(reader, FromHex("FF 7F F4 FE 00 00 00 01 00 00 0E 00"), &status);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_TRUE(frames.empty());
  EXPECT_TRUE(reader.InsideFrame());
}

TEST(FrameReader, HugeBlockCountIsRefusedFromTheHeaderAlone) {
  FrameReader reader;
  Status status;
  FeedAll(reader, FromHex("FF 7F F4 FE 00 00 00 01 FF FF FF FF"), &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
  EXPECT_NE(status.message().find("block count"), std::string::npos) << status.message();
}

TEST(FrameReader, NegativeBlockLengthIsRefused) {
  FrameReader reader;
  Status status;
  FeedAll(reader, FromHex("FF 7F F4 FE 00 00 00 01 00 00 00 01 80 00 00 00"), &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
  EXPECT_NE(status.message().find("negative"), std::string::npos) << status.message();
}

TEST(FrameReader, BlocksThatTogetherExceedThePayloadLimitAreRefused) {
  FrameLimits limits;
  limits.max_payload_size = 10;
  FrameReader reader(limits);
  Status status;
  // Each block is within the limit; the third one pushes the total over it.
  auto frames = FeedAll(reader, FrameWithBlocks(1, {"1234", "5678", "9ab"}), &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
  EXPECT_TRUE(frames.empty());
}

TEST(FrameReader, AnnouncedBlockIsBufferedOnlyAsItArrives) {
  // A header announcing one 7 MiB block (legal: the current Java reader has no
  // per-block limit, §1.6), then a trickle: the reader waits without error, and the
  // frame is produced once the rest arrives.
  const std::string payload(kMaxPayloadSize / 4, 'w');
  const std::string frame = FrameWithBlocks(8, {payload});
  FrameReader reader;
  std::vector<Frame> frames;
  ASSERT_TRUE(reader.Feed(Bytes(frame), 16 + 10, frames).ok());
  EXPECT_TRUE(frames.empty());
  EXPECT_TRUE(reader.InsideFrame());
  ASSERT_TRUE(reader.Feed(Bytes(frame) + 26, frame.size() - 26, frames).ok());
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload.size(), payload.size());
}

TEST(FrameReader, GarbageAfterGoodFramesInTheSameChunkFailsTheRest) {
  // A plain-text reply (an HTTP server on the port, say) is not a TubeMQ frame.
  FrameReader reader;
  Status status;
  auto frames =
      FeedAll(reader, EncodeFrame(1, "a") + EncodeFrame(2, "b") + "HTTP/1.1 400 Bad Request\r\n",
              &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1].payload, "b");
  EXPECT_NE(status.message().find("48545450"), std::string::npos)
      << "the bad token is named: " << status.message();
}

TEST(FrameReader, LengthPrefixedFramesOfInLong11AreRefused) {
  // §1.7: a 4-byte total length before the token (InLong 1.1/1.2) is not our framing.
  const std::string frame = EncodeFrame(1, "x");
  std::string prefixed(4, '\0');
  PutUint32(prefixed.data(), static_cast<uint32_t>(frame.size()));
  FrameReader reader;
  Status status;
  FeedAll(reader, prefixed + frame, &status);
  EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
}

}  // namespace
}  // namespace tubemq::codec
