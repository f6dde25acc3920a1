// The consumer's partition cache (behaviour.md §4): states, fairness, tokens, waiting.
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <thread>

#include "consumer/rmt_data_cache_csm.h"

namespace tubemq::consumer {
namespace {

using namespace std::chrono_literals;
using Clock = RmtDataCacheCsm::Clock;

meta::Partition P(int32_t broker, int32_t id, const char* topic = "t") {
  meta::Partition partition;
  partition.broker.id = broker;
  partition.broker.endpoint = net::Endpoint{"127.0.0.1", static_cast<uint16_t>(8000 + broker)};
  partition.topic = topic;
  partition.id = id;
  return partition;
}

TEST(RmtDataCacheCsm, StatusesWhenNothingIsSelectable) {
  RmtDataCacheCsm cache;
  RmtDataCacheCsm::Selection selection;
  EXPECT_EQ(cache.Select(selection).code(), ErrorCode::kNoPartitionAssigned);
  ASSERT_TRUE(cache.Add(P(1, 0), {}));
  EXPECT_FALSE(cache.Add(P(1, 0), {}));  // idempotent
  ASSERT_TRUE(cache.Select(selection).ok());
  EXPECT_EQ(cache.Select(selection).code(), ErrorCode::kAllPartitionInUse);
  RmtDataCacheCsm::Selection other;
  EXPECT_FALSE(cache.Release("1:t:0", selection.token + 1, true, 0ms));  // stale token
  ASSERT_TRUE(cache.Release("1:t:0", selection.token, true, 5000ms));
  EXPECT_EQ(cache.Select(other).code(), ErrorCode::kAllPartitionWaiting);
  cache.Close();
  EXPECT_EQ(cache.Select(other).code(), ErrorCode::kClientShutdown);
}

TEST(RmtDataCacheCsm, PartitionsTakeTurnsAndTokensNeverRepeat) {
  RmtDataCacheCsm cache;
  for (int i = 0; i < 3; ++i) cache.Add(P(1, i), {});
  std::vector<int32_t> order;
  std::set<uint64_t> tokens;
  for (int round = 0; round < 6; ++round) {
    RmtDataCacheCsm::Selection selection;
    ASSERT_TRUE(cache.Select(selection).ok());
    order.push_back(selection.partition.id);
    EXPECT_TRUE(tokens.insert(selection.token).second);
    ASSERT_TRUE(cache.Release(selection.partition.Key(), selection.token, true, 0ms));
  }
  EXPECT_EQ(order, (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
}

TEST(RmtDataCacheCsm, LastPackConsumedTravelsToTheNextSelection) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  RmtDataCacheCsm::Selection selection;
  ASSERT_TRUE(cache.Select(selection).ok());
  EXPECT_FALSE(selection.last_pack_consumed);
  cache.Release(selection.partition.Key(), selection.token, true, 0ms);
  ASSERT_TRUE(cache.Select(selection).ok());
  EXPECT_TRUE(selection.last_pack_consumed);
  cache.Release(selection.partition.Key(), selection.token, false, 0ms);
  ASSERT_TRUE(cache.Select(selection).ok());
  EXPECT_FALSE(selection.last_pack_consumed);
}

TEST(RmtDataCacheCsm, WaitSelectWakesOnReleaseWithoutPolling) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  RmtDataCacheCsm::Selection first;
  ASSERT_TRUE(cache.Select(first).ok());
  auto waiter = std::async(std::launch::async, [&cache] {
    RmtDataCacheCsm::Selection selection;
    const auto started = Clock::now();
    const Status status = cache.WaitSelect(Clock::now() + 5s, selection);
    return std::make_pair(status.ok(), Clock::now() - started);
  });
  std::this_thread::sleep_for(100ms);
  cache.Release(first.partition.Key(), first.token, true, 0ms);
  const auto [ok, waited] = waiter.get();
  EXPECT_TRUE(ok);
  EXPECT_LT(waited, 1s);
}

TEST(RmtDataCacheCsm, WaitSelectWakesWhenARestEnds) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  RmtDataCacheCsm::Selection selection;
  ASSERT_TRUE(cache.Select(selection).ok());
  cache.Release(selection.partition.Key(), selection.token, true, 200ms);
  const auto started = Clock::now();
  ASSERT_TRUE(cache.WaitSelect(Clock::now() + 5s, selection).ok());
  const auto waited = Clock::now() - started;
  EXPECT_GE(waited, 150ms);
  EXPECT_LT(waited, 2s);
}

TEST(RmtDataCacheCsm, WaitSelectGivesUpAtTheDeadlineAndOnClose) {
  RmtDataCacheCsm cache;
  RmtDataCacheCsm::Selection selection;
  const auto started = Clock::now();
  EXPECT_EQ(cache.WaitSelect(Clock::now() + 100ms, selection).code(),
            ErrorCode::kNoPartitionAssigned);
  EXPECT_GE(Clock::now() - started, 90ms);
  auto waiter = std::async(std::launch::async, [&cache] {
    RmtDataCacheCsm::Selection s;
    return cache.WaitSelect(Clock::now() + 10s, s).code();
  });
  std::this_thread::sleep_for(50ms);
  cache.Close();
  EXPECT_EQ(waiter.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(waiter.get(), ErrorCode::kClientShutdown);
}

TEST(RmtDataCacheCsm, UnconfirmedBatchesExpireAsNotConsumed) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  RmtDataCacheCsm::Selection selection;
  ASSERT_TRUE(cache.Select(selection).ok());
  EXPECT_TRUE(cache.ExpireUnconfirmed(10s).empty());
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(cache.ExpireUnconfirmed(10ms), std::vector<std::string>{"1:t:0"});
  EXPECT_FALSE(cache.IsInUse("1:t:0", selection.token));  // a late confirm is invalid
  RmtDataCacheCsm::Selection again;
  ASSERT_TRUE(cache.Select(again).ok());
  EXPECT_FALSE(again.last_pack_consumed);  // the batch comes again
  EXPECT_NE(again.token, selection.token);
}

TEST(RmtDataCacheCsm, RemovalsReportWhatTheUnregisterNeeds) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {5, 10});
  cache.Add(P(1, 1), {});
  cache.Add(P(2, 0), {});
  RmtDataCacheCsm::Selection selection;
  ASSERT_TRUE(cache.Select(selection).ok());  // 1:t:0 in use
  EXPECT_EQ(cache.OffsetsOf("1:t:0")->max, 10);
  const auto removed = cache.RemoveBroker(1);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_TRUE(removed[0].was_in_use);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_FALSE(cache.Release("1:t:0", selection.token, true, 0ms));  // gone
  EXPECT_FALSE(cache.Remove("1:t:0").has_value());
  EXPECT_EQ(cache.HeldByBroker().count(2), 1u);
}

TEST(RmtDataCacheCsm, ConfirmContextsRoundTripAndRejectGarbage) {
  std::string key;
  uint64_t token = 0;
  ASSERT_TRUE(RmtDataCacheCsm::ParseConfirmContext(
      RmtDataCacheCsm::ConfirmContext("1:topic:10000", 42), key, token));
  EXPECT_EQ(key, "1:topic:10000");
  EXPECT_EQ(token, 42u);
  for (const char* bad : {"", "@5", "1:t:0@", "1:t:0@x", "1:t:0@-3", "no-token"}) {
    EXPECT_FALSE(RmtDataCacheCsm::ParseConfirmContext(bad, key, token)) << bad;
  }
}

TEST(RmtDataCacheCsm, FirstRegistrationIsBookedOnlyWhenToldSo) {
  RmtDataCacheCsm cache;
  EXPECT_TRUE(cache.IsFirstRegistration("1:t:0"));
  EXPECT_TRUE(cache.IsFirstRegistration("1:t:0"));  // asking does not book
  cache.BookRegistration("1:t:0");
  EXPECT_FALSE(cache.IsFirstRegistration("1:t:0"));
}

}  // namespace
}  // namespace tubemq::consumer

namespace tubemq::consumer {
namespace {

TEST(RmtDataCacheCsmPause, PausedPartitionsAreHeldButNotSelected) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  cache.Add(P(1, 1), {});
  EXPECT_TRUE(cache.Pause("1:t:0"));
  EXPECT_FALSE(cache.Pause("9:t:9"));
  RmtDataCacheCsm::Selection selection;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cache.Select(selection).ok());
    EXPECT_EQ(selection.partition.Key(), "1:t:1");
    cache.Release("1:t:1", selection.token, true, 0ms);
  }
  // A batch out when its partition is paused is not affected, but does not requeue.
  ASSERT_TRUE(cache.Select(selection).ok());
  EXPECT_TRUE(cache.Pause("1:t:1"));
  EXPECT_TRUE(cache.Release("1:t:1", selection.token, true, 0ms));
  RmtDataCacheCsm::Selection none;
  EXPECT_EQ(cache.Select(none).code(), ErrorCode::kAllPartitionFrozen);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Paused(), (std::vector<std::string>{"1:t:0", "1:t:1"}));
  EXPECT_TRUE(cache.Resume("1:t:0"));
  ASSERT_TRUE(cache.Select(selection).ok());
  EXPECT_EQ(selection.partition.Key(), "1:t:0");
}

TEST(RmtDataCacheCsmPause, ResumeWakesAWaitingPoll) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  cache.Pause("1:t:0");
  auto waiter = std::async(std::launch::async, [&cache] {
    RmtDataCacheCsm::Selection selection;
    return cache.WaitSelect(Clock::now() + 5s, selection).ok();
  });
  std::this_thread::sleep_for(100ms);
  cache.Resume("1:t:0");
  EXPECT_EQ(waiter.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
}

}  // namespace
}  // namespace tubemq::consumer
