// The RPC envelope (protocol.md §2) and the worked byte layouts of §10.1-10.6, built
// with our codec and our .proto definitions and compared byte for byte.
#include <gtest/gtest.h>

#include "BrokerService.pb.h"
#include "MasterService.pb.h"
#include "RPC.pb.h"
#include "codec/frame_codec.h"
#include "codec/rpc_envelope.h"
#include "test_bytes.h"

namespace tubemq::codec {
namespace {

using testing::FromHex;
using testing::ToHex;

// Partial: some tests build messages with only the fields under test.
std::string Serialize(const google::protobuf::MessageLite& message) {
  std::string out;
  EXPECT_TRUE(message.SerializePartialToString(&out));
  return out;
}

std::string RequestFrame(int32_t serial, Method method, const google::protobuf::MessageLite& body,
                         int64_t timeout_ms = 10000) {
  return EncodeFrame(serial, EncodeRequestPayload(method, timeout_ms, Serialize(body)));
}

TEST(WorkedExamples, A_ProducerCloseRequest) {
  pb::CloseRequestP2M close;
  close.set_clientid("p1");
  EXPECT_EQ(ToHex(RequestFrame(1, Method::kProducerClose, close)),
            "FF 7F F4 FE 00 00 00 01 00 00 00 01 00 00 00 14 02 08 00 04 08 01 10 03 0B 08 03 "
            "10 90 4E 1A 04 0A 02 70 31");
}

TEST(WorkedExamples, B_SuccessResponseEncodesAndDecodes) {
  pb::CloseResponseM2P response;
  response.set_success(true);
  response.set_errcode(200);
  response.set_errmsg("OK!");
  const std::string expected =
      "FF 7F F4 FE 00 00 00 01 00 00 00 01 00 00 00 17 02 08 01 04 08 00 18 03 0E 08 03 12 0A "
      "08 01 10 C8 01 1A 03 4F 4B 21";
  EXPECT_EQ(ToHex(EncodeFrame(1, EncodeSuccessResponsePayload(3, Serialize(response)))), expected);

  FrameReader reader;
  std::vector<Frame> frames;
  const std::string bytes = FromHex(expected);
  ASSERT_TRUE(reader.Feed(testing::Bytes(bytes), bytes.size(), frames).ok());
  ASSERT_EQ(frames.size(), 1u);
  RpcReply reply;
  ASSERT_TRUE(DecodeResponsePayload(frames[0].payload, reply).ok());
  EXPECT_EQ(reply.status, ResponseStatus::kSuccess);
  EXPECT_EQ(reply.method, 3);
  pb::CloseResponseM2P decoded;
  ASSERT_TRUE(decoded.ParseFromString(reply.data));
  EXPECT_EQ(decoded.errmsg(), "OK!");
  EXPECT_EQ(decoded.errcode(), 200);
}

TEST(WorkedExamples, C_ProducerRegisterWithNegativeChecksum) {
  pb::RegisterRequestP2M request;
  request.set_clientid("p1");
  request.set_brokerchecksum(-1);
  request.set_hostname("10.0.0.1");
  EXPECT_EQ(ToHex(RequestFrame(2, Method::kProducerRegister, request)),
            "FF 7F F4 FE 00 00 00 02 00 00 00 01 00 00 00 29 02 08 00 04 08 01 10 03 20 08 01 "
            "10 90 4E 1A 19 0A 02 70 31 18 FF FF FF FF FF FF FF FF FF 01 22 08 31 30 2E 30 2E "
            "30 2E 31");
}

TEST(WorkedExamples, D_StandbyExceptionAnswer) {
  const std::string name = "org.apache.inlong.tubemq.corerpc.exception.StandbyException";
  const std::string message = "10.0.0.1:8715 is not master now. the connecting client id is p1";
  const std::string frame =
      EncodeFrame(2, EncodeExceptionResponsePayload(ResponseStatus::kError, name, message));
  EXPECT_EQ(frame.size(), 151u);
  EXPECT_EQ(ToHex(frame.substr(0, 25)),
            "FF 7F F4 FE 00 00 00 02 00 00 00 01 00 00 00 87 02 08 01 04 08 01 18 03 7E");
  RpcReply reply;
  ASSERT_TRUE(DecodeResponsePayload(frame.substr(16), reply).ok());
  EXPECT_EQ(reply.status, ResponseStatus::kError);
  EXPECT_EQ(reply.exception_name, name);
  EXPECT_EQ(reply.exception_message, message);
}

TEST(WorkedExamples, E_SendMessageWithAttribute) {
  pb::SendMessageRequestP2B request;
  request.set_clientid("p1");
  request.set_topicname("t1");
  request.set_partitionid(0);
  request.set_data(FromHex("00 00 00 0C 24 6D 73 67 54 79 70 65 24 3D 74 31 68 69"));
  request.set_flag(1);
  request.set_checksum(-1);
  request.set_sentaddr(static_cast<int32_t>(0x0A000001));
  request.set_msgtype("t1");
  request.mutable_authinfo()->set_visitauthorizedtoken(5);
  EXPECT_EQ(ToHex(RequestFrame(7, Method::kSendMessage, request)),
            "FF 7F F4 FE 00 00 00 07 00 00 00 01 00 00 00 48 02 08 00 04 08 03 10 03 3F 08 0D "
            "10 90 4E 1A 38 0A 02 70 31 12 02 74 31 18 00 22 12 00 00 00 0C 24 6D 73 67 54 79 "
            "70 65 24 3D 74 31 68 69 28 01 30 FF FF FF FF FF FF FF FF FF 01 38 81 80 80 50 42 "
            "02 74 31 52 02 08 05");
}

TEST(WorkedExamples, F_FetchRequestBodyUnderTheConsumerService) {
  pb::GetMessageRequestC2B request;
  request.set_clientid("c1");
  request.set_partitionid(0);
  request.set_groupname("g1");
  request.set_topicname("t1");
  request.set_lastpackconsumed(true);
  request.set_manualcommitoffset(false);
  request.set_escflowctrl(false);
  EXPECT_EQ(ToHex(Serialize(request)), "0A 02 63 31 10 00 1A 02 67 31 22 02 74 31 28 01 30 00 38 00");
  const std::string payload = EncodeRequestPayload(Method::kGetMessage, 10000, Serialize(request));
  EXPECT_EQ(ToHex(payload.substr(3, 5)), "04 08 02 10 03");
  EXPECT_EQ(ToHex(payload.substr(9, 2)), "08 11");
}

TEST(Envelope, EveryRequestStartsWithTheRequestFlagAndTheRightServiceType) {
  const struct {
    Method method;
    const char* header;
  } cases[] = {{Method::kProducerRegister, "02 08 00 04 08 01 10 03"},
               {Method::kConsumerHeartbeat, "02 08 00 04 08 01 10 03"},
               {Method::kGetPartitionMeta, "02 08 00 04 08 01 10 03"},
               {Method::kGetMessage, "02 08 00 04 08 02 10 03"},
               {Method::kCommitOffset, "02 08 00 04 08 02 10 03"},
               {Method::kBrokerConsumerRegister, "02 08 00 04 08 02 10 03"},
               {Method::kSendMessage, "02 08 00 04 08 03 10 03"}};
  for (const auto& c : cases) {
    EXPECT_EQ(ToHex(EncodeRequestPayload(c.method, 5000, "x").substr(0, 8)), c.header)
        << static_cast<int>(c.method);
  }
}

TEST(Envelope, TimeoutIsAlwaysPresentAndPositive) {
  // 10000 ms encodes as 10 90 4E right after the method (then the empty request, 1A 00).
  EXPECT_EQ(ToHex(EncodeRequestPayload(Method::kSendMessage, 10000, "").substr(8, 8)),
            "07 08 0D 10 90 4E 1A 00");
  RpcRequestView view;
  ASSERT_TRUE(DecodeRequestPayload(EncodeRequestPayload(Method::kProducerClose, 0, "b"), view).ok());
  EXPECT_GT(view.timeout_ms, 0) << "a zero timeout must still be sent as a positive value";
  ASSERT_TRUE(DecodeRequestPayload(EncodeRequestPayload(Method::kProducerClose, 3000, "b"), view).ok());
  EXPECT_EQ(view.timeout_ms, 3000);
  EXPECT_EQ(view.method, 3);
  EXPECT_EQ(view.body, "b");
  EXPECT_EQ(view.service, ServiceType::kMaster);
  EXPECT_EQ(view.protocol_version, 3);
}

TEST(Envelope, ResponseHeadersForEachStatus) {
  EXPECT_EQ(ToHex(EncodeSuccessResponsePayload(1, "d").substr(0, 8)), "02 08 01 04 08 00 18 03");
  EXPECT_EQ(ToHex(EncodeExceptionResponsePayload(ResponseStatus::kError, "E", "m").substr(0, 8)),
            "02 08 01 04 08 01 18 03");
  // FATAL carries no protocol version.
  EXPECT_EQ(ToHex(EncodeExceptionResponsePayload(ResponseStatus::kFatal, "E", "m").substr(0, 6)),
            "02 08 01 02 08 02");
}

TEST(Envelope, FatalResponseDecodesAsAnException) {
  RpcReply reply;
  ASSERT_TRUE(DecodeResponsePayload(
                  EncodeExceptionResponsePayload(ResponseStatus::kFatal, "java.io.IOException",
                                                 "boom"),
                  reply)
                  .ok());
  EXPECT_EQ(reply.status, ResponseStatus::kFatal);
  EXPECT_EQ(reply.exception_name, "java.io.IOException");
  EXPECT_EQ(reply.exception_message, "boom");
}

TEST(Envelope, UnparsableResponsesAreProtocolErrorsNotCrashes) {
  RpcReply reply;
  for (const std::string& bad :
       {std::string(), FromHex("02"), FromHex("02 08 01"), FromHex("7F 08 01"),
        FromHex("02 08 01 04 08 00 18 03"),              // success without a body
        FromHex("02 08 01 04 08 00 18 03 FF FF FF FF 0F"),  // absurd body length
        FromHex("02 08 01 02 18 03 00"),                 // header without the required status
        std::string(64, '\xFF')}) {
    const Status status = DecodeResponsePayload(bad, reply);
    EXPECT_EQ(status.code(), ErrorCode::kProtocolError) << ToHex(bad);
    EXPECT_FALSE(status.message().empty());
  }
}

TEST(ProtoDefinitions, NegativeVarintsAndSentAddr) {
  pb::HeartRequestP2M heartbeat;
  heartbeat.set_clientid("p");
  heartbeat.set_brokerchecksum(-1);
  heartbeat.set_hostname("h");
  EXPECT_NE(ToHex(Serialize(heartbeat)).find("10 FF FF FF FF FF FF FF FF FF 01"), std::string::npos);

  pb::SendMessageRequestP2B send;
  send.set_sentaddr(static_cast<int32_t>(0xC0A8010A));  // 192.168.1.10
  EXPECT_EQ(ToHex(Serialize(send)), "38 8A 82 A0 85 FC FF FF FF FF 01");
}

TEST(ProtoDefinitions, RequiredFieldsOfHeartRequestC2MAreChecked) {
  pb::HeartRequestC2M heartbeat;
  heartbeat.set_clientid("c");
  heartbeat.set_groupname("g");
  EXPECT_FALSE(heartbeat.IsInitialized()) << "reportSubscribeInfo is required";
  heartbeat.set_reportsubscribeinfo(false);
  EXPECT_TRUE(heartbeat.IsInitialized());
  EXPECT_NE(ToHex(Serialize(heartbeat)).find("20 00"), std::string::npos);
}

TEST(ProtoDefinitions, BrokerRegisterOpTypes) {
  pb::RegisterRequestC2B request;
  request.set_optype(31);
  EXPECT_EQ(ToHex(Serialize(request)).substr(0, 5), "08 1F");
  request.set_optype(32);
  EXPECT_EQ(ToHex(Serialize(request)).substr(0, 5), "08 20");
}

}  // namespace
}  // namespace tubemq::codec
