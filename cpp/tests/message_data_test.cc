// Message bytes (protocol.md §5.9-5.11, §8.1; checklist items 12-14, 24).
#include <gtest/gtest.h>

#include "meta/message_data.h"
#include "tubemq/consumer.h"
#include "service/credentials.h"
#include "test_bytes.h"

namespace tubemq::meta {
namespace {

using testing::ToHex;

TEST(MessageData, AttributeHeaderIsLengthPrefixedAndSetsTheFlag) {
  OutgoingMessage message;
  message.msg_type = "t1";
  std::string attribute;
  ASSERT_TRUE(BuildAttribute(message, attribute).ok());
  EXPECT_EQ(attribute, "$msgType$=t1");
  const MessageData data = EncodeMessageData(attribute, std::string("hi"));
  EXPECT_EQ(ToHex(data.Joined()), "00 00 00 0C 24 6D 73 67 54 79 70 65 24 3D 74 31 68 69");
  EXPECT_EQ(data.flag, 1);
  EXPECT_EQ(static_cast<uint32_t>(MaskedCrc32(data)), 0x11D1E1B3u);
  EXPECT_EQ(MaskedCrc32(data), MaskedCrc32(data.Joined()));
}

TEST(MessageData, NoAttributeMeansTheBodyAloneAndFlagZero) {
  const MessageData data = EncodeMessageData("", std::string("payload"));
  EXPECT_EQ(data.Joined(), "payload");
  EXPECT_EQ(data.head, "");
  EXPECT_EQ(data.flag, 0);
}

TEST(MessageData, ReservedItemsComeFirstThenUserAttributes) {
  OutgoingMessage message;
  message.msg_type = "A";
  message.msg_time = "202501011230";
  message.attributes = {{"k1", "v1"}, {"k2", ""}};
  std::string attribute;
  ASSERT_TRUE(BuildAttribute(message, attribute).ok());
  EXPECT_EQ(attribute, "$msgType$=A,$msgTime$=202501011230,k1=v1,k2=");
}

TEST(MessageData, BadAttributesAreRefusedWithTheReason) {
  const struct {
    std::vector<std::pair<std::string, std::string>> attributes;
    std::string msg_time;
    const char* reason;
  } cases[] = {
      {{{"a,b", "v"}}, "", "contains ',' or '='"},
      {{{"k", "v=w"}}, "", "contains ',' or '='"},
      {{{" ", "v"}}, "", "must not be blank"},
      {{{"$msgType$", "x"}}, "", "is reserved"},
      {{}, "2025010112", "12 digits"},
      {{}, "20250101123x", "12 digits"},
  };
  for (const auto& c : cases) {
    OutgoingMessage message;
    message.attributes = c.attributes;
    message.msg_time = c.msg_time;
    std::string attribute;
    const Status status = BuildAttribute(message, attribute);
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(status.message().find(c.reason), std::string::npos) << status.message();
  }
}

TEST(MessageData, MaskedCrcVectors) {
  EXPECT_EQ(MaskedCrc32("123456789"), 1274296614);
  EXPECT_EQ(static_cast<uint32_t>(MaskedCrc32("hello")), 0x3610A686u);
}

TEST(MessageData, SentAddrIsTheAddressAsASignedInteger) {
  EXPECT_EQ(SentAddr("10.0.0.1"), 167772161);
  EXPECT_EQ(SentAddr("127.0.0.1"), 2130706433);
  EXPECT_EQ(SentAddr("192.168.1.10"), -1062731510);
  EXPECT_EQ(SentAddr("not-an-ip"), 0);
  EXPECT_EQ(SentAddr("1.2.3.256"), 0);
}

TEST(Credentials, SignatureOfTheWorkedExample) {
  EXPECT_EQ(::tubemq::service::AuthSignature("admin", "secret", 1700000000000, 12345),
            "GzIEn3jIHQZaZeKFky5I832KCzg%3D");
}

}  // namespace
}  // namespace tubemq::meta

namespace tubemq::meta {
namespace {

using testing::FromHex;

TEST(MessageDecoding, WorkedExampleOfTheSpec) {
  const std::string data = FromHex("00 00 00 0C 24 6D 73 67 54 79 70 65 24 3D 74 31 68 69");
  DecodedMessage message;
  ASSERT_TRUE(DecodeMessageData(data, 1, 0x11D1E1B3, message));
  EXPECT_EQ(message.attribute, "$msgType$=t1");
  EXPECT_EQ(message.body, "hi");
  EXPECT_EQ(message.msg_type, "t1");
  EXPECT_TRUE(message.properties.empty());
  // The views point into the fetched bytes: nothing was copied.
  EXPECT_EQ(message.body.data(), data.data() + 16);
}

TEST(MessageDecoding, AnyChangedByteMakesTheMessageBeSkipped) {
  const std::string data = FromHex("00 00 00 0C 24 6D 73 67 54 79 70 65 24 3D 74 31 68 69");
  DecodedMessage message;
  for (size_t i = 0; i < data.size(); ++i) {
    std::string changed = data;
    changed[i] = static_cast<char>(changed[i] ^ 0x01);
    EXPECT_FALSE(DecodeMessageData(changed, 1, 0x11D1E1B3, message)) << i;
  }
  EXPECT_FALSE(DecodeMessageData(data, 1, 0x11D1E1B4, message));
}

TEST(MessageDecoding, HostileAttributeLengthsAreSkippedNotRead) {
  DecodedMessage message;
  for (const std::string& data : {FromHex("00 00"), FromHex("7F FF FF FF 61"),
                                  FromHex("00 00 00 05 61 62")}) {
    EXPECT_FALSE(DecodeMessageData(data, 1, MaskedCrc32(data), message));
  }
}

TEST(MessageDecoding, RoundTripWithPropertiesAndTime) {
  OutgoingMessage outgoing;
  outgoing.msg_type = "A";
  outgoing.msg_time = "202501011230";
  outgoing.attributes = {{"k1", "v1"}, {"empty", ""}};
  std::string attribute;
  ASSERT_TRUE(BuildAttribute(outgoing, attribute).ok());
  const MessageData encoded = EncodeMessageData(attribute, std::string("body"));
  DecodedMessage message;
  const std::string joined = encoded.Joined();
  ASSERT_TRUE(DecodeMessageData(joined, encoded.flag, MaskedCrc32(joined), message));
  EXPECT_EQ(message.msg_type, "A");
  EXPECT_EQ(message.msg_time, "202501011230");
  ASSERT_EQ(message.properties.size(), 2u);
  EXPECT_EQ(message.properties[0].first, "k1");
  EXPECT_EQ(message.properties[1].second, "");
  EXPECT_EQ(message.body, "body");
  // Without the flag the same bytes are all body.
  ASSERT_TRUE(DecodeMessageData(joined, 0, MaskedCrc32(joined), message));
  EXPECT_EQ(message.body, joined);
}

TEST(MessageDecoding, PropertiesParsedLaterMatchTheEagerOnes) {
  OutgoingMessage outgoing;
  outgoing.msg_type = "A";
  outgoing.msg_time = "202501011230";
  outgoing.attributes = {{"k1", "v1"}, {"empty", ""}, {"k3", "v3"}};
  std::string attribute;
  ASSERT_TRUE(BuildAttribute(outgoing, attribute).ok());
  const MessageData encoded = EncodeMessageData(attribute, std::string("body"));
  const std::string joined = encoded.Joined();
  const int32_t crc = MaskedCrc32(joined);
  DecodedMessage eager, lazy;
  ASSERT_TRUE(DecodeMessageData(joined, encoded.flag, crc, eager));
  ASSERT_TRUE(DecodeMessageData(joined, encoded.flag, crc, lazy, false));
  // The fetch path's decode finds the reserved items and leaves the rest for later.
  EXPECT_TRUE(lazy.properties.empty());
  EXPECT_EQ(lazy.msg_type, "A");
  EXPECT_EQ(lazy.msg_time, "202501011230");
  EXPECT_EQ(ParseProperties(lazy.attribute), eager.properties);
  ASSERT_EQ(eager.properties.size(), 3u);
  EXPECT_EQ(eager.properties[2].second, "v3");

  tubemq::ReceivedMessage received;
  received.attribute = lazy.attribute;
  EXPECT_EQ(received.Properties(), eager.properties);
}

}  // namespace
}  // namespace tubemq::meta
