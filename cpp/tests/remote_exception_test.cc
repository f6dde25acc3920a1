// Exception responses (protocol.md §2.3-2.5; checklist §10 item 10): reported as
// "<exceptionName>#<stackTrace>" and classified by simple class name, whatever package
// prefix the server's protocol-version rewriting gave the class.
#include <gtest/gtest.h>

#include "MasterService.pb.h"
#include "codec/remote_exception.h"
#include "codec/rpc_envelope.h"
#include "service/rpc_call.h"

namespace tubemq {
namespace {

using codec::ClassifyRemoteException;
using codec::RemoteExceptionKind;

// The three prefixes a server may give (§2.5): protocolVer 3, 2 and 1.
const char* const kPrefixes[] = {"org.apache.inlong.tubemq.", "com.apache.tubemq.",
                                 "com.tencent.tubemq."};

TEST(RemoteException, StandbyIsRecognisedUnderEveryPackagePrefix) {
  for (const char* prefix : {"org.apache.inlong.tubemq.", "com.apache.tubemq.",
                             "com.tencent.tubemq."}) {
    const std::string name = std::string(prefix) + "corerpc.exception.StandbyException";
    EXPECT_EQ(codec::ClassifyRemoteException(name), codec::RemoteExceptionKind::kStandby) << name;
  }
  EXPECT_EQ(codec::ClassifyRemoteException("java.lang.Exception"),
            codec::RemoteExceptionKind::kRequestRejected);
}

TEST(RemoteException, IsReportedAsNameHashMessage) {
  codec::RpcReply reply;
  reply.status = codec::ResponseStatus::kError;
  reply.exception_name = "java.lang.Exception";
  reply.exception_message = "No service 1 found on the server";
  const Status status = codec::RemoteExceptionStatus(reply);
  EXPECT_EQ(status.code(), ErrorCode::kRemoteException);
  EXPECT_EQ(status.message(), "java.lang.Exception#No service 1 found on the server");
}

TEST(RemoteException, EveryNameOfTheSpecTableMapsToItsReaction) {
  const struct {
    const char* simple_name;
    RemoteExceptionKind kind;
  } table[] = {
      {"StandbyException", RemoteExceptionKind::kStandby},
      {"ServerNotReadyException", RemoteExceptionKind::kNodeUnavailable},
      {"ServiceStoppingException", RemoteExceptionKind::kNodeUnavailable},
      {"UnknownProtocolException", RemoteExceptionKind::kRequestRejected},
  };
  for (const char* prefix : kPrefixes) {
    for (const auto& row : table) {
      const std::string name =
          std::string(prefix) + "corerpc.exception." + row.simple_name;
      EXPECT_EQ(ClassifyRemoteException(name), row.kind) << name;
    }
  }
}

TEST(RemoteException, ServerFailuresAndMalformedRequestsOnlyFailTheCall) {
  // §2.5: do not switch masters for these; §2.4 lists where they come from.
  for (const char* name :
       {"java.lang.reflect.InvocationTargetException", "java.lang.Exception",
        "java.io.EOFException", "com.google.protobuf.InvalidProtocolBufferException",
        "org.apache.inlong.tubemq.shaded.com.google.protobuf.InvalidProtocolBufferException",
        "", "."}) {
    EXPECT_EQ(ClassifyRemoteException(name), RemoteExceptionKind::kRequestRejected) << name;
  }
}

TEST(RemoteException, OnlyTheSimpleClassNameCounts) {
  EXPECT_EQ(codec::SimpleClassName("a.b.StandbyException"), "StandbyException");
  EXPECT_EQ(codec::SimpleClassName("StandbyException"), "StandbyException");
  EXPECT_EQ(codec::SimpleClassName("a.b."), "");
  EXPECT_EQ(ClassifyRemoteException("StandbyException"), RemoteExceptionKind::kStandby);
  // Names that merely contain a known name are other classes.
  EXPECT_EQ(ClassifyRemoteException("x.y.NotAStandbyException"),
            RemoteExceptionKind::kRequestRejected);
  EXPECT_EQ(ClassifyRemoteException("x.StandbyException.Inner"),
            RemoteExceptionKind::kRequestRejected);
  EXPECT_EQ(ClassifyRemoteException("x.y.standbyexception"),
            RemoteExceptionKind::kRequestRejected);
}

TEST(RemoteException, DecodedFromTheWireWithAnEmptyMessage) {
  // InvocationTargetException comes with an empty stackTrace (§2.4): "name#".
  codec::RpcReply reply;
  ASSERT_TRUE(codec::DecodeResponsePayload(
                  codec::EncodeExceptionResponsePayload(
                      codec::ResponseStatus::kError,
                      "java.lang.reflect.InvocationTargetException", ""),
                  reply)
                  .ok());
  const Status status = codec::RemoteExceptionStatus(reply);
  EXPECT_EQ(status.code(), ErrorCode::kRemoteException);
  EXPECT_EQ(status.message(), "java.lang.reflect.InvocationTargetException#");
}

TEST(ReplyStatus, SuccessIsOkAndErrorOrFatalIsARemoteException) {
  codec::RpcReply reply;
  reply.status = codec::ResponseStatus::kSuccess;
  EXPECT_TRUE(service::ReplyStatus(reply).ok());
  for (auto status : {codec::ResponseStatus::kError, codec::ResponseStatus::kFatal}) {
    reply.status = status;
    reply.exception_name = "java.lang.Exception";
    reply.exception_message = "Unsupported method ID :11";
    const Status result = service::ReplyStatus(reply);
    EXPECT_EQ(result.code(), ErrorCode::kRemoteException);
    EXPECT_EQ(result.message(), "java.lang.Exception#Unsupported method ID :11");
  }
}

TEST(ReplyStatus, ParseReplyDecodesTheMethodResponseOrSaysWhyNot) {
  pb::CloseResponseM2P sent;
  sent.set_success(true);
  sent.set_errcode(200);
  sent.set_errmsg("OK!");
  codec::RpcReply reply;
  reply.status = codec::ResponseStatus::kSuccess;
  reply.method = 3;
  reply.data = sent.SerializeAsString();
  pb::CloseResponseM2P received;
  ASSERT_TRUE(service::ParseReply(reply, received).ok());
  EXPECT_EQ(received.errmsg(), "OK!");

  reply.data = "\xFF\xFF\xFF";  // not a CloseResponseM2P
  EXPECT_EQ(service::ParseReply(reply, received).code(), ErrorCode::kProtocolError);
  reply.data.clear();  // parses, but the required fields are missing
  EXPECT_EQ(service::ParseReply(reply, received).code(), ErrorCode::kProtocolError);

  reply.status = codec::ResponseStatus::kError;
  reply.exception_name = "org.apache.inlong.tubemq.corerpc.exception.StandbyException";
  reply.exception_message = "m";
  EXPECT_EQ(service::ParseReply(reply, received).code(), ErrorCode::kRemoteException);
}

}  // namespace
}  // namespace tubemq
