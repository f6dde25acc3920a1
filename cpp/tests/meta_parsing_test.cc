// Strings the master sends (protocol.md §5.2-5.5; checklist §10 items 19-21, 23): parsed
// exactly, and bad input turned into a typed Status, never a crash. Addresses users give
// are in endpoint_test.cc.
#include <gtest/gtest.h>

#include <climits>

#include "meta/broker_info.h"
#include "meta/partition.h"
#include "meta/subscribe_info.h"

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

}  // namespace
}  // namespace tubemq

namespace tubemq {
namespace {

TEST(BrokerInfo, IdsOutsideInt32AndSpacesInsideFieldsAreRefused) {
  meta::BrokerInfo broker;
  for (const char* bad : {"2147483648:h:8123", "-1:h:8123", "1:h:81 23", "1:h:8123:9", " :h:1"}) {
    EXPECT_EQ(meta::ParseBrokerInfo(bad, false, broker).code(), ErrorCode::kProtocolError) << bad;
  }
  ASSERT_TRUE(meta::ParseBrokerInfo("2147483647:h:1", false, broker).ok());
  EXPECT_EQ(broker.id, INT32_MAX);
}

TEST(ProducerTopicInfo, BrokerIdsOutsideInt32AreRefusedNotWrapped) {
  // 4294967297 would wrap to broker 1 if narrowed to int32 unchecked.
  meta::TopicPartitions topic;
  for (const char* bad : {"demo#4294967297:1:1#", "demo#-4294967295:1:1#"}) {
    EXPECT_EQ(meta::ParseProducerTopicInfo(bad, TwoBrokers(), topic).code(),
              ErrorCode::kProtocolError)
        << bad;
    EXPECT_TRUE(topic.partitions.empty()) << bad;
  }
}

TEST(ProducerTopicInfo, SurroundingBlanksAndEmptyItemsAreTolerated) {
  meta::TopicPartitions topic;
  ASSERT_TRUE(meta::ParseProducerTopicInfo("  demo#1:2:1,,2:1:1#2048 \n", TwoBrokers(), topic)
                  .ok());
  EXPECT_EQ(topic.topic, "demo");
  EXPECT_EQ(topic.max_message_size, 2048);
  EXPECT_EQ(topic.partitions.size(), 3u);
}

TEST(ProducerTopicInfo, ResultReplacesWhatTheOutputHeldBefore) {
  meta::TopicPartitions topic;
  ASSERT_TRUE(meta::ParseProducerTopicInfo("demo#1:3:2#1048576", TwoBrokers(), topic).ok());
  ASSERT_TRUE(meta::ParseProducerTopicInfo("demo#2:1:1#", TwoBrokers(), topic).ok());
  ASSERT_EQ(topic.partitions.size(), 1u);
  EXPECT_EQ(topic.partitions[0].Key(), "2:demo:0");
  EXPECT_EQ(topic.max_message_size, 0);
}

TEST(ProducerTopicInfo, PartitionsCarryTheBrokerAddress) {
  meta::TopicPartitions topic;
  ASSERT_TRUE(meta::ParseProducerTopicInfo("demo#2:1:1#", TwoBrokers(), topic).ok());
  ASSERT_EQ(topic.partitions.size(), 1u);
  EXPECT_EQ(topic.partitions[0].broker.endpoint.ToString(), "10.0.0.2:8123");
  EXPECT_EQ(meta::PartitionFullString(topic.partitions[0]), "2:10.0.0.2:8123#demo:0");
}

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

namespace tubemq {
namespace {

TEST(ProducerTopicInfo, AbsurdCountsAreRefusedBeforeAnyAllocation) {
  meta::TopicPartitions topic;
  EXPECT_EQ(meta::ParseProducerTopicInfo("demo#1:10000:1000#", TwoBrokers(), topic).code(),
            ErrorCode::kProtocolError);
  // Also for a broker the client does not know and would skip.
  EXPECT_EQ(meta::ParseProducerTopicInfo("demo#9:10000:1000#", TwoBrokers(), topic).code(),
            ErrorCode::kProtocolError);
}

TEST(ProducerTopicInfo, CountsWhoseProductOverflowsAreRefused) {
  // Found by the fuzzer: 4 x 8797299535549067721 wraps around int64 and slipped under
  // the bound, leaving the expansion loop to run for ever.
  meta::TopicPartitions topic;
  EXPECT_EQ(meta::ParseProducerTopicInfo("2#1:4:00000000000008797299535549067721#", TwoBrokers(),
                                         topic)
                .code(),
            ErrorCode::kProtocolError);
  EXPECT_EQ(meta::ParseProducerTopicInfo("demo#1:2:4611686018427387904#", TwoBrokers(), topic)
                .code(),
            ErrorCode::kProtocolError);
  std::vector<meta::SubscribablePartition> metas;
  EXPECT_EQ(meta::ParseConsumerTopicMeta("demo#1:4611686018427387904:2:1", TwoBrokers(), metas)
                .code(),
            ErrorCode::kProtocolError);
}

TEST(ConsumerTopicMeta, StoreCountComesFirstAndStatusMarksSubscribable) {
  std::vector<meta::SubscribablePartition> partitions;
  ASSERT_TRUE(meta::ParseConsumerTopicMeta("demo#1:2:3:1,2:1:2:0", TwoBrokers(), partitions).ok());
  std::vector<std::string> keys;
  std::vector<bool> subscribable;
  for (const auto& item : partitions) {
    keys.push_back(item.partition.Key());
    subscribable.push_back(item.subscribable);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"1:demo:0", "1:demo:1", "1:demo:2", "1:demo:10000",
                                            "1:demo:10001", "1:demo:10002", "2:demo:0",
                                            "2:demo:1"}));
  EXPECT_EQ(subscribable,
            (std::vector<bool>{true, true, true, true, true, true, false, false}));
}

TEST(ConsumerTopicMeta, MalformedOrAbsurdStringsAreProtocolErrorsAndAppendNothing) {
  std::vector<meta::SubscribablePartition> partitions;
  for (const char* bad : {"", "demo", "demo#1:1:1", "#1:1:1:1", "demo#1:1:x:1", "demo#1:1:1:1#x",
                          "demo#1:1:1:1,2:1000:10000:1"}) {
    EXPECT_EQ(meta::ParseConsumerTopicMeta(bad, TwoBrokers(), partitions).code(),
              ErrorCode::kProtocolError)
        << bad;
  }
  EXPECT_TRUE(partitions.empty());
}

}  // namespace
}  // namespace tubemq
