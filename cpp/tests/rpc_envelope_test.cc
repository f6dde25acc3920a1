// The RPC envelope (protocol.md §1.3, §2; checklist §10 items 6-11) and the worked byte
// layouts A-F of §10.1-10.6, built with our codec and our .proto definitions and
// compared byte for byte (and, for the responses, decoded back from the spec's bytes).
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <climits>

#include "BrokerService.pb.h"
#include "MasterService.pb.h"
#include "RPC.pb.h"
#include "codec/big_endian.h"
#include "codec/frame_codec.h"
#include "codec/remote_exception.h"
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

TEST(WorkedExamples, D_StandbyExceptionAnswerByteForByte) {
  const std::string expected =
      "FF 7F F4 FE 00 00 00 02 00 00 00 01 00 00 00 87 02 08 01 04 08 01 18 03 7E 0A 3B 6F 72 "
      "67 2E 61 70 61 63 68 65 2E 69 6E 6C 6F 6E 67 2E 74 75 62 65 6D 71 2E 63 6F 72 65 72 70 "
      "63 2E 65 78 63 65 70 74 69 6F 6E 2E 53 74 61 6E 64 62 79 45 78 63 65 70 74 69 6F 6E 12 "
      "3F 31 30 2E 30 2E 30 2E 31 3A 38 37 31 35 20 69 73 20 6E 6F 74 20 6D 61 73 74 65 72 20 "
      "6E 6F 77 2E 20 74 68 65 20 63 6F 6E 6E 65 63 74 69 6E 67 20 63 6C 69 65 6E 74 20 69 64 "
      "20 69 73 20 70 31";
  EXPECT_EQ(ToHex(EncodeFrame(
                2, EncodeExceptionResponsePayload(
                       ResponseStatus::kError,
                       "org.apache.inlong.tubemq.corerpc.exception.StandbyException",
                       "10.0.0.1:8715 is not master now. the connecting client id is p1"))),
            expected);

  // And the client side: the spec's bytes, read and decoded as a client would.
  const std::string bytes = FromHex(expected);
  FrameReader reader;
  std::vector<Frame> frames;
  ASSERT_TRUE(reader.Feed(testing::Bytes(bytes), bytes.size(), frames).ok());
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].serial, 2);
  RpcReply reply;
  ASSERT_TRUE(DecodeResponsePayload(frames[0].payload, reply).ok());
  EXPECT_EQ(reply.status, ResponseStatus::kError);
  EXPECT_EQ(ClassifyRemoteException(reply.exception_name), RemoteExceptionKind::kStandby);
  EXPECT_EQ(RemoteExceptionStatus(reply).message(),
            "org.apache.inlong.tubemq.corerpc.exception.StandbyException#10.0.0.1:8715 is not "
            "master now. the connecting client id is p1");
}

TEST(WorkedExamples, F_FetchRequestPayloadInFull) {
  pb::GetMessageRequestC2B request;
  request.set_clientid("c1");
  request.set_partitionid(0);
  request.set_groupname("g1");
  request.set_topicname("t1");
  request.set_lastpackconsumed(true);
  request.set_manualcommitoffset(false);
  request.set_escflowctrl(false);
  // RequestBody = 08 11 · 10 90 4E · 1A 14 <20 bytes> = 27 bytes (0x1B).
  EXPECT_EQ(ToHex(EncodeRequestPayload(Method::kGetMessage, 10000, Serialize(request))),
            "02 08 00 04 08 02 10 03 1B 08 11 10 90 4E 1A 14 0A 02 63 31 10 00 1A 02 67 31 22 "
            "02 74 31 28 01 30 00 38 00");
}

TEST(Envelope, NonPositiveTimeoutsAreStillSentAsPositive) {
  // §2.6: without a positive timeout the server never answers.
  for (int64_t timeout : {int64_t{0}, int64_t{-1}, int64_t{-10000}, INT64_MIN}) {
    RpcRequestView view;
    ASSERT_TRUE(DecodeRequestPayload(EncodeRequestPayload(Method::kGetMessage, timeout, "r"), view)
                    .ok());
    EXPECT_GT(view.timeout_ms, 0) << timeout;
  }
  pb::RequestBody body;
  const std::string payload = EncodeRequestPayload(Method::kCommitOffset, 0, "r");
  // The third delimited message is the RequestBody: 02 08 00 | 04 08 02 10 03 | len ...
  ASSERT_TRUE(body.ParseFromString(payload.substr(9)));
  EXPECT_TRUE(body.has_timeout());
  EXPECT_EQ(body.method(), 18);
}

TEST(Envelope, RequestCarriesTheThreeDelimitedMessages) {
  const std::string payload = EncodeRequestPayload(Method::kConsumerRegisterV2, 14500, "req");
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(payload.data()),
                                            static_cast<int>(payload.size()));
  pb::RpcConnHeader conn;
  pb::RequestHeader header;
  pb::RequestBody body;
  for (google::protobuf::MessageLite* message :
       std::initializer_list<google::protobuf::MessageLite*>{&conn, &header, &body}) {
    uint32_t size = 0;
    ASSERT_TRUE(in.ReadVarint32(&size));
    const auto limit = in.PushLimit(static_cast<int>(size));
    ASSERT_TRUE(message->ParseFromCodedStream(&in));
    in.PopLimit(limit);
  }
  EXPECT_EQ(in.CurrentPosition(), static_cast<int>(payload.size())) << "nothing after the body";
  EXPECT_EQ(conn.flag(), 0);
  EXPECT_FALSE(conn.has_traceid());
  EXPECT_EQ(header.servicetype(), 1);
  EXPECT_EQ(header.protocolver(), 3);
  EXPECT_EQ(body.method(), 20);
  EXPECT_EQ(body.timeout(), 14500);
  EXPECT_EQ(body.request(), "req");
}

TEST(Envelope, FatalResponseFromTheWireWithoutProtocolVersion) {
  // Built by hand, as the Java server writes it (§2.3, §2.4): no protocolVer on FATAL.
  const std::string name = "java.io.EOFException";
  const std::string text = "IPC server unable to read call parameters:null";
  std::string body = "\x0A" + std::string(1, static_cast<char>(name.size())) + name + "\x12" +
                     std::string(1, static_cast<char>(text.size())) + text;
  const std::string payload =
      FromHex("02 08 01 02 08 02") + std::string(1, static_cast<char>(body.size())) + body;
  RpcReply reply;
  ASSERT_TRUE(DecodeResponsePayload(payload, reply).ok());
  EXPECT_EQ(reply.status, ResponseStatus::kFatal);
  EXPECT_EQ(reply.exception_name, name);
  EXPECT_EQ(reply.exception_message, text);
  EXPECT_EQ(RemoteExceptionStatus(reply).message(), name + "#" + text);
}

TEST(Envelope, ExceptionBodyWithoutStackTraceIsFine) {
  // stackTrace is optional in RPC.proto: only exceptionName is required.
  RpcReply reply;
  ASSERT_TRUE(DecodeResponsePayload(FromHex("02 08 01 04 08 01 18 03 03 0A 01 45"), reply).ok());
  EXPECT_EQ(reply.status, ResponseStatus::kError);
  EXPECT_EQ(reply.exception_name, "E");
  EXPECT_EQ(reply.exception_message, "");
}

TEST(Envelope, TheStatusDecidesWhichBodyIsRead) {
  // §10 item 9: RspResponseBody only for status 0. A success body behind an ERROR
  // header (and the reverse) lacks the required fields of the body actually read.
  const std::string success_body = FromHex("0E 08 03 12 0A 08 01 10 C8 01 1A 03 4F 4B 21");
  const std::string exception_body = FromHex("05 0A 01 45 12 00");
  RpcReply reply;
  EXPECT_EQ(DecodeResponsePayload(FromHex("02 08 01 04 08 01 18 03") + success_body, reply).code(),
            ErrorCode::kProtocolError);
  EXPECT_EQ(DecodeResponsePayload(FromHex("02 08 01 04 08 00 18 03") + exception_body, reply).code(),
            ErrorCode::kProtocolError);
  EXPECT_TRUE(DecodeResponsePayload(FromHex("02 08 01 04 08 00 18 03") + success_body, reply).ok());
  EXPECT_TRUE(DecodeResponsePayload(FromHex("02 08 01 04 08 01 18 03") + exception_body, reply).ok());
}

TEST(Envelope, UnknownStatusValueIsAProtocolError) {
  // Status 3 is not in the enum: proto2 keeps it as an unknown field, so the required
  // status is missing.
  RpcReply reply;
  EXPECT_EQ(DecodeResponsePayload(FromHex("02 08 01 04 08 03 18 03 03 0A 01 45"), reply).code(),
            ErrorCode::kProtocolError);
}

TEST(Envelope, SuccessBodyWithoutDataIsAProtocolError) {
  RpcReply reply;
  EXPECT_EQ(DecodeResponsePayload(FromHex("02 08 01 04 08 00 18 03 02 08 03"), reply).code(),
            ErrorCode::kProtocolError);
}

TEST(Envelope, BytesAfterTheThirdMessageAreIgnored) {
  // §1.5 step 5 (the old C++ client pads; Java ignores the rest).
  RpcReply reply;
  ASSERT_TRUE(DecodeResponsePayload(EncodeSuccessResponsePayload(3, "data") + std::string(7, '\0'),
                                    reply)
                  .ok());
  EXPECT_EQ(reply.data, "data");
}

TEST(Envelope, MessagesStraddlingBlockBoundariesDecode) {
  // §1.2: block boundaries carry no meaning, even inside a length varint. Example B's
  // payload in blocks of 1, 4, 0 and 18 bytes.
  const std::string payload =
      FromHex("02 08 01 04 08 00 18 03 0E 08 03 12 0A 08 01 10 C8 01 1A 03 4F 4B 21");
  std::string frame = FromHex("FF 7F F4 FE 00 00 00 01 00 00 00 04");
  size_t at = 0;
  for (size_t length : {size_t{1}, size_t{4}, size_t{0}, size_t{18}}) {
    char prefix[4];
    PutUint32(prefix, static_cast<uint32_t>(length));
    frame.append(prefix, 4);
    frame += payload.substr(at, length);
    at += length;
  }
  FrameReader reader;
  std::vector<Frame> frames;
  ASSERT_TRUE(reader.Feed(testing::Bytes(frame), frame.size(), frames).ok());
  ASSERT_EQ(frames.size(), 1u);
  RpcReply reply;
  ASSERT_TRUE(DecodeResponsePayload(frames[0].payload, reply).ok());
  EXPECT_EQ(reply.method, 3);
  EXPECT_EQ(ToHex(reply.data), "08 01 10 C8 01 1A 03 4F 4B 21");
}

TEST(Envelope, MalformedRequestsAreRefusedByTheFakeServerDecoder) {
  RpcRequestView view;
  for (const std::string& bad :
       {std::string(), FromHex("02 08 00"), FromHex("02 08 00 04 08 01 10 03"),
        FromHex("02 08 00 04 08 01 10 03 02 10 01")}) {  // RequestBody without method
    EXPECT_EQ(DecodeRequestPayload(bad, view).code(), ErrorCode::kProtocolError) << ToHex(bad);
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

TEST(RequestFrame, IsByteForByteTheFrameOfTheRequestPayload) {
  // One block, exactly one block, several blocks; a negative timeout becomes 1.
  for (const size_t data_size : {size_t{0}, size_t{1024}, size_t{8000}, size_t{8192},
                                 size_t{20000}, size_t{100000}}) {
    for (const int64_t timeout : {int64_t{10000}, int64_t{-5}, int64_t{1} << 40}) {
      pb::SendMessageRequestP2B request;
      request.set_clientid("client-1");
      request.set_topicname("topic");
      request.set_partitionid(3);
      request.set_data(std::string(data_size, 'd'));
      request.set_flag(1);
      request.set_checksum(12345);
      request.set_sentaddr(-1);
      const std::string expected = EncodeFrame(
          0, EncodeRequestPayload(Method::kSendMessage, timeout, request.SerializeAsString()));
      EXPECT_EQ(EncodeRequestFrame(Method::kSendMessage, timeout, request), expected)
          << data_size << " bytes, timeout " << timeout;
    }
  }
  pb::HeartRequestP2M heartbeat;
  heartbeat.set_clientid("c");
  heartbeat.set_brokerchecksum(-1);
  heartbeat.set_hostname("h");
  EXPECT_EQ(EncodeRequestFrame(Method::kProducerHeartbeat, 3000, heartbeat),
            EncodeFrame(0, EncodeRequestPayload(Method::kProducerHeartbeat, 3000,
                                                heartbeat.SerializeAsString())));
}

TEST(RequestFrame, RawFieldsFollowTheRequestAndParseAsItsOwnFields) {
  // The send path's use: `data` (field 4) encoded by the caller from two buffers,
  // after the other fields, into a reused buffer; one block and several.
  for (const size_t body_size : {size_t{0}, size_t{1024}, size_t{20000}}) {
    pb::SendMessageRequestP2B request;
    request.set_clientid("client-1");
    request.set_topicname("topic");
    request.set_partitionid(3);
    request.set_flag(1);
    request.set_checksum(12345);
    request.set_sentaddr(-1);
    const std::string head = "\x00\x00\x00\x03k=v";
    const std::string body(body_size, 'b');
    std::string key(1, '\x22');  // field 4, length-delimited
    {
      google::protobuf::io::StringOutputStream stream(&key);
      google::protobuf::io::CodedOutputStream out(&stream);
      out.WriteVarint32(static_cast<uint32_t>(head.size() + body.size()));
    }
    std::string reused(3000, 'x');
    reused.clear();
    const std::string frame = EncodeRequestFrame(Method::kSendMessage, 10000, request,
                                                 {key, head, body}, std::move(reused));
    const std::string expected =
        EncodeFrame(0, EncodeRequestPayload(Method::kSendMessage, 10000,
                                            request.SerializePartialAsString() + key + head + body));
    EXPECT_EQ(frame, expected) << body_size << " bytes";
    // What the broker reads: the whole request, `data` joined from its parts.
    FrameReader reader;
    std::vector<Frame> frames;
    ASSERT_TRUE(reader.Feed(reinterpret_cast<const uint8_t*>(frame.data()), frame.size(), frames)
                    .ok());
    ASSERT_EQ(frames.size(), 1u);
    RpcRequestView view;
    ASSERT_TRUE(DecodeRequestPayload(frames[0].payload, view).ok());
    pb::SendMessageRequestP2B parsed;
    ASSERT_TRUE(parsed.ParseFromString(view.body));
    EXPECT_TRUE(parsed.IsInitialized());
    EXPECT_EQ(parsed.data(), head + body);
    EXPECT_EQ(parsed.clientid(), "client-1");
    EXPECT_EQ(parsed.sentaddr(), -1);
  }
}

}  // namespace
}  // namespace tubemq::codec
