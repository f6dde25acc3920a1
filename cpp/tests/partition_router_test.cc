// Partition choice and broker shielding (behaviour.md §2.5, §2.8).
#include <gtest/gtest.h>

#include <map>

#include "producer/broker_shield.h"
#include "producer/partition_router.h"

namespace tubemq::producer {
namespace {

std::vector<meta::Partition> Partitions(int brokers, int per_broker) {
  std::vector<meta::Partition> out;
  for (int b = 1; b <= brokers; ++b) {
    for (int p = 0; p < per_broker; ++p) {
      meta::Partition partition;
      partition.broker.id = b;
      partition.topic = "t";
      partition.id = p;
      out.push_back(partition);
    }
  }
  return out;
}

TEST(PartitionRouter, RoundRobinSpreadsEvenly) {
  PartitionRouter router;
  const auto partitions = Partitions(1, 3);
  std::map<int, int> counts;
  for (int i = 0; i < 300; ++i) {
    ++counts[router.Choose("t", partitions, std::nullopt, nullptr)->id];
  }
  EXPECT_EQ(counts, (std::map<int, int>{{0, 100}, {1, 100}, {2, 100}}));
}

TEST(PartitionRouter, UnusablePartitionsAreSkippedUnlessNothingElseIsLeft) {
  PartitionRouter router;
  const auto partitions = Partitions(2, 2);
  for (int i = 0; i < 20; ++i) {
    const auto* chosen = router.Choose("t", partitions, std::nullopt,
                                       [](const meta::Partition& p) { return p.broker.id == 2; });
    EXPECT_EQ(chosen->broker.id, 2);
  }
  const auto* fallback =
      router.Choose("t", partitions, std::nullopt, [](const meta::Partition&) { return false; });
  EXPECT_NE(fallback, nullptr);
}

TEST(PartitionRouter, EqualKeysGoToTheSamePartitionWhateverTheListOrder) {
  PartitionRouter first;
  PartitionRouter second;
  auto partitions = Partitions(2, 4);
  auto reversed = std::vector<meta::Partition>(partitions.rbegin(), partitions.rend());
  std::map<std::string, int> spread;
  for (int i = 0; i < 200; ++i) {
    const std::string key = "user-" + std::to_string(i);
    const auto* a = first.Choose("t", partitions, key, nullptr);
    const auto* b = second.Choose("t", reversed, key, nullptr);
    EXPECT_EQ(a->Key(), b->Key());
    ++spread[a->Key()];
  }
  EXPECT_EQ(spread.size(), 8u);  // keys do spread over all partitions
}

TEST(PartitionRouter, StableHashIsFixed) {
  // FNV-1a 64 of "a": a published constant, so keyed routing never changes across versions.
  EXPECT_EQ(PartitionRouter::StableHash("a"), 0xaf63dc4c8601ec8cull);
}

TEST(BrokerShield, UnavailableBrokersAreAvoidedFor50Seconds) {
  BrokerShield shield;
  const auto now = BrokerShield::Clock::now();
  shield.OnUnavailable(1, now);
  EXPECT_TRUE(shield.Shielded(1, now + std::chrono::seconds(49)));
  EXPECT_FALSE(shield.Shielded(1, now + std::chrono::seconds(51)));
  EXPECT_FALSE(shield.Shielded(2, now));
}

TEST(BrokerShield, UnreachableBackoffDoublesAndSuccessClearsIt) {
  BrokerShield shield;
  const auto now = BrokerShield::Clock::now();
  shield.OnUnreachable(1, now, /*probeable=*/true);
  EXPECT_TRUE(shield.Shielded(1, now + std::chrono::seconds(9)));
  EXPECT_FALSE(shield.Shielded(1, now + std::chrono::seconds(11)));
  shield.OnUnreachable(1, now, /*probeable=*/true);
  EXPECT_TRUE(shield.Shielded(1, now + std::chrono::seconds(19)));
  shield.OnSuccess(1);
  EXPECT_FALSE(shield.Shielded(1, now));
}

TEST(PartitionRouter, PinnedPartitionWinsOverKeyAndUsability) {
  PartitionRouter router;
  const auto partitions = Partitions(2, 3);
  const std::optional<std::string> pinned = "2:t:1";
  for (int i = 0; i < 10; ++i) {
    const auto* chosen = router.Choose(
        "t", partitions, std::string("k") + std::to_string(i),
        [](const meta::Partition&) { return false; }, pinned);
    ASSERT_NE(chosen, nullptr);
    EXPECT_EQ(chosen->Key(), "2:t:1");
  }
  EXPECT_EQ(router.Choose("t", partitions, std::nullopt, nullptr, std::string("3:t:0")), nullptr);
}

TEST(BrokerShield, OnlyBrokersThatRefusedConnectionsAreProbed) {
  BrokerShield shield;
  const auto now = BrokerShield::Clock::now();
  shield.OnUnreachable(1, now, /*probeable=*/true);   // refused: a connect tells
  shield.OnUnreachable(2, now, /*probeable=*/false);  // silent: a connect proves nothing
  shield.OnUnavailable(3, now);                       // 503: it answers, and says no
  EXPECT_EQ(shield.Probeable(now), std::vector<int32_t>{1});
  EXPECT_TRUE(shield.Probeable(now + std::chrono::seconds(11)).empty());  // shield over
}

TEST(BrokerShield, CountsOnlyBrokersShieldedNow) {
  BrokerShield shield;
  const auto now = BrokerShield::Clock::now();
  EXPECT_EQ(shield.CountShielded(now), 0u);
  shield.OnUnreachable(1, now, /*probeable=*/true);
  shield.OnUnavailable(2, now);
  EXPECT_EQ(shield.CountShielded(now), 2u);
  EXPECT_EQ(shield.CountShielded(now + std::chrono::seconds(11)), 1u);  // 1's 10 s are over
  shield.OnSuccess(2);
  EXPECT_EQ(shield.CountShielded(now), 1u);
}

TEST(PartitionRouter, PrecomputedKeysChooseWhatBuiltKeysChoose) {
  PartitionRouter router;
  const auto partitions = Partitions(3, 4);
  std::vector<std::string> keys;
  for (const auto& partition : partitions) keys.push_back(partition.Key());
  for (int i = 0; i < 50; ++i) {
    const std::optional<std::string> key = "key-" + std::to_string(i);
    EXPECT_EQ(router.Choose("t", partitions, key, nullptr, std::nullopt, &keys),
              router.Choose("t", partitions, key, nullptr));
  }
  const std::optional<std::string> pinned = "2:t:3";
  const auto* chosen = router.Choose("t", partitions, std::nullopt, nullptr, pinned, &keys);
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen->Key(), "2:t:3");
  EXPECT_EQ(router.Choose("t", partitions, std::nullopt, nullptr,
                          std::optional<std::string>("9:t:0"), &keys),
            nullptr);
}

}  // namespace
}  // namespace tubemq::producer
