// Strings the master sends (protocol.md §5.2-5.4) and addresses users give us: parsed
// exactly, and bad input turned into a Status, never a crash.
#include <gtest/gtest.h>

#include "codec/remote_exception.h"
#include "codec/rpc_envelope.h"
#include "meta/broker_info.h"
#include "meta/partition.h"
#include "meta/subscribe_info.h"
#include "net/endpoint.h"

namespace tubemq {
namespace {

TEST(BrokerInfo, BlankPortMeansTheDefaultForThePlainOrTlsConnection) {
  meta::BrokerInfo broker;
  ASSERT_TRUE(meta::ParseBrokerInfo("1:10.0.0.5: ", false, broker).ok());
  EXPECT_EQ(broker.id, 1);
  EXPECT_EQ(broker.endpoint.ToString(), "10.0.0.5:8123");
  ASSERT_TRUE(meta::ParseBrokerInfo("1:10.0.0.5: ", true, broker).ok());
  EXPECT_EQ(broker.endpoint.port, 8124);
  ASSERT_TRUE(meta::ParseBrokerInfo("3:10.0.0.6:8200", false, broker).ok());
  EXPECT_EQ(broker.id, 3);
  EXPECT_EQ(broker.endpoint.port, 8200);
}

TEST(BrokerInfo, MalformedEntriesAreErrorsAndSkippedFromLists) {
  meta::BrokerInfo broker;
  for (const char* bad : {"", "1", "1:host", "x:10.0.0.1:8123", "1::8123", "1:h:99999", "1:h:-5"}) {
    EXPECT_FALSE(meta::ParseBrokerInfo(bad, false, broker).ok()) << bad;
  }
  Status first_error;
  const meta::BrokerMap brokers =
      meta::ParseBrokerList({"1:10.0.0.1:8123", "garbage", "2:10.0.0.2: "}, false, &first_error);
  EXPECT_EQ(brokers.size(), 2u);
  EXPECT_FALSE(first_error.ok());
  EXPECT_NE(first_error.message().find("garbage"), std::string::npos) << first_error.message();
}

meta::BrokerMap TwoBrokers() {
  Status error;
  return meta::ParseBrokerList({"1:10.0.0.1:8123", "2:10.0.0.2:8123"}, false, &error);
}

TEST(ProducerTopicInfo, StoresAndPartitionsExpandToIds) {
  meta::TopicPartitions topic;
  ASSERT_TRUE(meta::ParseProducerTopicInfo("demo#1:3:2,2:3:1#1048576", TwoBrokers(), topic).ok());
  EXPECT_EQ(topic.topic, "demo");
  EXPECT_EQ(topic.max_message_size, 1048576);
  std::vector<std::string> keys;
  for (const auto& partition : topic.partitions) keys.push_back(partition.Key());
  EXPECT_EQ(keys, (std::vector<std::string>{"1:demo:0", "1:demo:1", "1:demo:2", "1:demo:10000",
                                            "1:demo:10001", "1:demo:10002", "2:demo:0", "2:demo:1",
                                            "2:demo:2"}));
}

TEST(ProducerTopicInfo, EmptyMaxSizeMeansTheDefault) {
  meta::TopicPartitions topic;
  ASSERT_TRUE(meta::ParseProducerTopicInfo("demo#1:3:1#", TwoBrokers(), topic).ok());
  EXPECT_EQ(topic.partitions.size(), 3u);
  EXPECT_EQ(topic.max_message_size, 0);
}

TEST(ProducerTopicInfo, UnknownBrokersAreSkipped) {
  meta::TopicPartitions topic;
  ASSERT_TRUE(meta::ParseProducerTopicInfo("demo#9:2:1,1:1:1#", TwoBrokers(), topic).ok());
  ASSERT_EQ(topic.partitions.size(), 1u);
  EXPECT_EQ(topic.partitions[0].broker.id, 1);
}

TEST(ProducerTopicInfo, MalformedStringsAreProtocolErrors) {
  meta::TopicPartitions topic;
  for (const char* bad : {"", "demo", "#1:1:1#", "demo#1:x:1#", "demo#1:1#", "demo#1:1:1#big"}) {
    EXPECT_EQ(meta::ParseProducerTopicInfo(bad, TwoBrokers(), topic).code(),
              ErrorCode::kProtocolError)
        << bad;
  }
}

TEST(Endpoint, ParsesHostPortAndRefusesTheRest) {
  net::Endpoint endpoint;
  ASSERT_TRUE(net::ParseEndpoint("127.0.0.1:8715", endpoint).ok());
  EXPECT_EQ(endpoint.host, "127.0.0.1");
  EXPECT_EQ(endpoint.port, 8715);
  for (const char* bad : {"", "host", ":8715", "host:", "host:0", "host:65536", "host:12a",
                          "a:b:c"}) {
    const Status status = net::ParseEndpoint(bad, endpoint);
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(Endpoint, MasterListsDropBlanksAndDuplicatesAndKeepOrder) {
  std::vector<net::Endpoint> masters;
  ASSERT_TRUE(net::ParseEndpointList(" b:2 , a:1,,b:2 ", masters).ok());
  ASSERT_EQ(masters.size(), 2u);
  EXPECT_EQ(masters[0].ToString(), "b:2");
  EXPECT_EQ(masters[1].ToString(), "a:1");
  EXPECT_FALSE(net::ParseEndpointList(" , ", masters).ok());
  EXPECT_FALSE(net::ParseEndpointList("a:1,bad", masters).ok());
}

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

}  // namespace
}  // namespace tubemq

namespace tubemq {
namespace {

TEST(SubscribeInfo, FormatsAndParsesTheSpecExample) {
  meta::SubscribeInfo info;
  ASSERT_TRUE(meta::ParseSubscribeInfo("c1@g1#1:10.0.0.5:8123#demo:0", info).ok());
  EXPECT_EQ(info.consumer_id, "c1");
  EXPECT_EQ(info.group, "g1");
  EXPECT_EQ(info.partition.broker.id, 1);
  EXPECT_EQ(info.partition.broker.endpoint.ToString(), "10.0.0.5:8123");
  EXPECT_EQ(info.partition.Key(), "1:demo:0");
  EXPECT_EQ(meta::FormatSubscribeInfo(info), "c1@g1#1:10.0.0.5:8123#demo:0");
  EXPECT_EQ(meta::PartitionFullString(info.partition), "1:10.0.0.5:8123#demo:0");
}

TEST(SubscribeInfo, MalformedStringsAreProtocolErrors) {
  meta::SubscribeInfo info;
  for (const char* bad : {"", "c1g1#1:h:1#t:0", "@g#1:h:1#t:0", "c@#1:h:1#t:0", "c@g#1:h:x#t:0",
                          "c@g#1:h:1#t", "c@g#1:h:1", "c@g#1:h:0#t:0"}) {
    EXPECT_EQ(meta::ParseSubscribeInfo(bad, info).code(), ErrorCode::kProtocolError) << bad;
  }
}

TEST(SubscribeInfo, BrokerFailureInfoSplitsAtTheFirstColon) {
  int32_t code = 0;
  meta::Partition partition;
  ASSERT_TRUE(meta::ParsePartitionFailure("411:1:10.0.0.5:8123#demo:0", code, partition).ok());
  EXPECT_EQ(code, 411);
  EXPECT_EQ(partition.Key(), "1:demo:0");
  EXPECT_FALSE(meta::ParsePartitionFailure("x:1:h:1#t:0", code, partition).ok());
}

}  // namespace
}  // namespace tubemq
