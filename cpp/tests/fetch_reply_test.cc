// The GetMessage reply decoded in place (consumer/fetch_reply.h), against replies that
// protobuf's own serializer wrote.
#include <gtest/gtest.h>

#include <string>

#include "BrokerService.pb.h"
#include "consumer/fetch_reply.h"
#include "meta/message_data.h"

namespace tubemq::consumer {
namespace {

// A TransferedMessage as a producer would have sent it: with an attribute header when
// `attribute` is not empty, and its checksum right unless `corrupt`.
void AddMessage(pb::GetMessageResponseB2C& reply, int64_t id, const std::string& attribute,
                const std::string& body, bool corrupt = false) {
  const meta::MessageData data = meta::EncodeMessageData(attribute, std::string(body));
  pb::TransferedMessage* message = reply.add_messages();
  message->set_messageid(id);
  message->set_checksum(meta::MaskedCrc32(data) + (corrupt ? 1 : 0));
  message->set_payloaddata(data.Joined());
  message->set_flag(data.flag);
}

pb::GetMessageResponseB2C ThreeMessages() {
  pb::GetMessageResponseB2C reply;
  reply.set_success(true);
  reply.set_errcode(200);
  AddMessage(reply, 11, "$msgType$=order,$msgTime$=202501011230,city=x", "first body");
  AddMessage(reply, 12, "", "second");
  AddMessage(reply, 13, "$msgType$=order", "broken", /*corrupt=*/true);
  AddMessage(reply, 14, "$msgType$=click,k=v", std::string(3000, 'z'));
  reply.set_curroffset(640);
  reply.set_maxoffset(900);
  reply.set_currdatadlt(260);
  return reply;
}

int64_t PayloadBytes(const pb::GetMessageResponseB2C& reply) {
  int64_t total = 0;
  for (const auto& message : reply.messages()) total += message.payloaddata().size();
  return total;
}

TEST(FetchReply, BodiesBecomeOneRunAndAttributesKeepTheirItems) {
  const pb::GetMessageResponseB2C reply = ThreeMessages();
  FetchReply out;
  ASSERT_TRUE(DecodeFetchReply(reply.SerializeAsString(), {}, out).ok());
  EXPECT_TRUE(out.success);
  EXPECT_EQ(out.err_code, 200);
  EXPECT_EQ(out.curr_offset, 640);
  EXPECT_EQ(out.max_offset, 900);
  EXPECT_EQ(out.curr_data_dlt, 260);
  EXPECT_EQ(out.corrupt, 1);
  EXPECT_EQ(out.payload_bytes, PayloadBytes(reply));
  ASSERT_EQ(out.messages.size(), 3u);

  const ReceivedMessage& first = out.messages[0];
  EXPECT_EQ(first.message_id, 11);
  EXPECT_EQ(first.body, "first body");
  EXPECT_EQ(first.attribute, "$msgType$=order,$msgTime$=202501011230,city=x");
  EXPECT_EQ(first.msg_type, "order");
  EXPECT_EQ(first.msg_time, "202501011230");
  const auto properties = first.Properties();
  ASSERT_EQ(properties.size(), 1u);
  EXPECT_EQ(properties[0].first, "city");

  EXPECT_EQ(out.messages[1].body, "second");
  EXPECT_EQ(out.messages[1].attribute, "");
  EXPECT_EQ(out.messages[1].msg_type, "");
  EXPECT_EQ(out.messages[2].message_id, 14);
  EXPECT_EQ(out.messages[2].body, std::string(3000, 'z'));
  EXPECT_EQ(out.messages[2].msg_type, "click");
  EXPECT_EQ(out.messages[2].msg_time, "");

  // One run of bytes from the buffer's start, in order.
  const std::string_view bytes = out.owner->bytes;
  EXPECT_EQ(first.body.data(), bytes.data());
  EXPECT_EQ(out.messages[1].body.data(), first.body.data() + first.body.size());
  EXPECT_EQ(out.messages[2].body.data(),
            out.messages[1].body.data() + out.messages[1].body.size());
}

TEST(FetchReply, FiltersKeepOnlyTheirMsgTypes) {
  FetchReply out;
  ASSERT_TRUE(DecodeFetchReply(ThreeMessages().SerializeAsString(), {"click"}, out).ok());
  ASSERT_EQ(out.messages.size(), 1u);
  EXPECT_EQ(out.messages[0].message_id, 14);
  EXPECT_EQ(out.messages[0].body.data(), out.owner->bytes.data());
  EXPECT_EQ(out.payload_bytes, PayloadBytes(ThreeMessages()));  // all of them arrived
}

TEST(FetchReply, ARefusalCarriesItsCodeAndText) {
  pb::GetMessageResponseB2C reply;
  reply.set_success(false);
  reply.set_errcode(404);
  reply.set_errmsg("no new message");
  reply.set_minlimittime(50);
  reply.set_escflowctrl(true);
  reply.set_requireslow(true);
  FetchReply out;
  ASSERT_TRUE(DecodeFetchReply(reply.SerializeAsString(), {}, out).ok());
  EXPECT_FALSE(out.success);
  EXPECT_EQ(out.err_code, 404);
  EXPECT_EQ(out.err_msg, "no new message");
  EXPECT_EQ(out.min_limit_time, 50);
  EXPECT_TRUE(out.esc_flow_ctrl);
  EXPECT_TRUE(out.require_slow);
  EXPECT_FALSE(out.curr_offset.has_value());
  EXPECT_TRUE(out.messages.empty());
}

TEST(FetchReply, NegativeNumbersReadAsProtobufWritesThem) {
  pb::GetMessageResponseB2C reply;
  reply.set_success(true);
  reply.set_errcode(-7);
  reply.set_curroffset(-1);
  AddMessage(reply, -3, "", "x");
  FetchReply out;
  ASSERT_TRUE(DecodeFetchReply(reply.SerializeAsString(), {}, out).ok());
  EXPECT_EQ(out.err_code, -7);
  EXPECT_EQ(out.curr_offset, -1);
  ASSERT_EQ(out.messages.size(), 1u);
  EXPECT_EQ(out.messages[0].message_id, -3);
}

// Every prefix of a good reply, and every single-byte change of it: accepted exactly
// when protobuf's parser accepts the same bytes, and then with the same messages.
TEST(FetchReply, AcceptsWhatProtobufAcceptsAndNothingElse) {
  const std::string good = ThreeMessages().SerializeAsString();
  std::vector<std::string> inputs;
  for (size_t size = 0; size < good.size(); ++size) inputs.push_back(good.substr(0, size));
  for (size_t at = 0; at < good.size(); at += 7) {
    for (const char change : {'\x00', '\x7f', '\xff', '\x22'}) {
      std::string changed = good;
      changed[at] = change;
      inputs.push_back(changed);
    }
  }
  for (const std::string& input : inputs) {
    pb::GetMessageResponseB2C parsed;
    const bool protobuf_ok = parsed.ParseFromString(input);
    FetchReply out;
    const Status status = DecodeFetchReply(input, {}, out);
    ASSERT_EQ(status.ok(), protobuf_ok) << "input of " << input.size() << " bytes";
    if (!status.ok()) {
      EXPECT_EQ(status.code(), ErrorCode::kProtocolError);
      continue;
    }
    ASSERT_EQ(out.success, parsed.success());
    ASSERT_EQ(out.err_code, parsed.errcode());
    size_t kept = 0;
    for (const auto& message : parsed.messages()) {
      meta::DecodedMessage decoded;
      if (!meta::DecodeMessageData(message.payloaddata(), message.flag(), message.checksum(),
                                   decoded, false)) {
        continue;
      }
      ASSERT_LT(kept, out.messages.size());
      EXPECT_EQ(out.messages[kept].message_id, message.messageid());
      EXPECT_EQ(out.messages[kept].body, decoded.body);
      EXPECT_EQ(out.messages[kept].attribute, decoded.attribute);
      ++kept;
    }
    EXPECT_EQ(kept, out.messages.size());
  }
}

}  // namespace
}  // namespace tubemq::consumer
