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
  partition.broker.endpoint = meta::Endpoint{"127.0.0.1", static_cast<uint16_t>(8000 + broker)};
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


// --- fetching ahead: WaitNext and Park ---

using Next = RmtDataCacheCsm::Next;

struct Waited {
  Status status;
  Next next{};
  RmtDataCacheCsm::Parked parked;
  RmtDataCacheCsm::Selection selection;
};

Waited WaitNext(RmtDataCacheCsm& cache, int64_t ahead_bytes,
                std::chrono::milliseconds wait = 0ms) {
  Waited out;
  out.status = cache.WaitNext(Clock::now() + wait, ahead_bytes, out.next, out.parked,
                              out.selection);
  return out;
}

TEST(RmtDataCacheCsmAhead, EveryIdlePartitionIsSelectedWithinTheBound) {
  RmtDataCacheCsm cache;
  for (int i = 0; i < 4; ++i) cache.Add(P(1, i), {});
  // Until batches tell, one on its way counts as 1 MiB: 2.5 MiB lets two go.
  EXPECT_EQ(WaitNext(cache, 5 << 19).next, Next::kSelected);
  EXPECT_EQ(WaitNext(cache, 5 << 19).next, Next::kSelected);
  EXPECT_EQ(WaitNext(cache, 5 << 19).status.code(), ErrorCode::kAllPartitionInUse);
  // With no fetching ahead, one fetch at a time.
  RmtDataCacheCsm single;
  for (int i = 0; i < 2; ++i) single.Add(P(1, i), {});
  EXPECT_EQ(WaitNext(single, 0).next, Next::kSelected);
  EXPECT_EQ(WaitNext(single, 0).status.code(), ErrorCode::kAllPartitionInUse);
}

TEST(RmtDataCacheCsmAhead, SmallBatchesLetMoreFetchesGo) {
  RmtDataCacheCsm cache;
  for (int i = 0; i < 8; ++i) cache.Add(P(1, i), {});
  // Each round starts every fetch the 2 MiB bound allows, then every batch arrives
  // (100 KiB each), is handed out and confirmed.
  std::vector<size_t> started;
  for (int round = 0; round < 6; ++round) {
    std::vector<RmtDataCacheCsm::Selection> on_the_way;
    for (Waited w = WaitNext(cache, 2 << 20); w.status.ok(); w = WaitNext(cache, 2 << 20)) {
      ASSERT_EQ(w.next, Next::kSelected);
      on_the_way.push_back(w.selection);
    }
    started.push_back(on_the_way.size());
    for (const auto& s : on_the_way) {
      ASSERT_TRUE(cache.Park({s.partition.Key(), s.token, 100 << 10, nullptr}));
    }
    for (size_t i = 0; i < on_the_way.size(); ++i) {
      const Waited taken = WaitNext(cache, 0);
      ASSERT_EQ(taken.next, Next::kParked);
      ASSERT_TRUE(cache.Release(taken.parked.key, taken.parked.token, true, 0ms));
    }
  }
  EXPECT_EQ(started.front(), 2u);  // 1 MiB each until batches tell
  EXPECT_GE(started.back(), 5u);   // the estimate came down towards 100 KiB
}

TEST(RmtDataCacheCsmAhead, AParkedBatchWakesAWaiter) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  cache.Add(P(1, 1), {});
  const Waited first = WaitNext(cache, 0);
  ASSERT_EQ(first.next, Next::kSelected);
  auto waiter = std::async(std::launch::async, [&cache] { return WaitNext(cache, 0, 5000ms); });
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(cache.Park({first.selection.partition.Key(), first.selection.token, 10, nullptr}));
  ASSERT_EQ(waiter.wait_for(2s), std::future_status::ready);
  const Waited got = waiter.get();
  ASSERT_TRUE(got.status.ok());
  EXPECT_EQ(got.next, Next::kParked);
  EXPECT_EQ(got.parked.key, "1:t:0");
  EXPECT_EQ(got.parked.token, first.selection.token);
  // Handed out, the batch's partition stays in use until its confirm.
  EXPECT_TRUE(cache.IsInUse("1:t:0", first.selection.token));
}

TEST(RmtDataCacheCsmAhead, APartitionFreedMeanwhileIsSetOnItsWayBeforeAParkedBatchIsTaken) {
  // A poll that finds a batch waiting still tops the fetches up: a partition assigned
  // (or confirmed) since the last poll is fetched while the application works.
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  const Waited first = WaitNext(cache, 8 << 20);
  ASSERT_TRUE(cache.Park({"1:t:0", first.selection.token, 10, nullptr}));
  cache.Add(P(1, 1), {});
  const Waited topped = WaitNext(cache, 8 << 20);
  ASSERT_EQ(topped.next, Next::kSelected);
  EXPECT_EQ(topped.selection.partition.Key(), "1:t:1");
  const Waited taken = WaitNext(cache, 8 << 20);
  ASSERT_EQ(taken.next, Next::kParked);
  EXPECT_EQ(taken.parked.key, "1:t:0");
}

TEST(RmtDataCacheCsmAhead, ParkedBatchesCountAgainstTheBound) {
  RmtDataCacheCsm cache;
  for (int i = 0; i < 3; ++i) cache.Add(P(1, i), {});
  const Waited a = WaitNext(cache, 5 << 19);  // 2.5 MiB: two on their way at 1 MiB each
  const Waited b = WaitNext(cache, 5 << 19);
  ASSERT_EQ(b.next, Next::kSelected);
  ASSERT_TRUE(cache.Park({a.selection.partition.Key(), a.selection.token, 1 << 20, nullptr}));
  // One on its way and 1 MiB parked: another fetch would make 3 MiB, so the batch comes.
  const Waited taken = WaitNext(cache, 5 << 19);
  ASSERT_EQ(taken.next, Next::kParked);
  // Taken, it no longer counts: the third partition goes.
  EXPECT_EQ(WaitNext(cache, 5 << 19).next, Next::kSelected);
  // With no fetching ahead, a parked batch is taken, never topped up beside.
  RmtDataCacheCsm single;
  single.Add(P(1, 0), {});
  single.Add(P(1, 1), {});
  const Waited one = WaitNext(single, 0);
  ASSERT_TRUE(single.Park({"1:t:0", one.selection.token, 10, nullptr}));
  EXPECT_EQ(WaitNext(single, 0).next, Next::kParked);
}

TEST(RmtDataCacheCsmAhead, ABatchWhosePartitionMovedOnIsDropped) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  cache.Add(P(1, 1), {});
  const Waited a = WaitNext(cache, 8 << 20);
  const Waited b = WaitNext(cache, 8 << 20);
  ASSERT_EQ(b.next, Next::kSelected);
  // Released meanwhile (a confirm timeout): its late batch is not parked.
  ASSERT_TRUE(cache.Release(a.selection.partition.Key(), a.selection.token, false, 0ms));
  EXPECT_FALSE(cache.Park({a.selection.partition.Key(), a.selection.token, 10, nullptr}));
  // Parked, then its partition removed (a rebalance): the batch goes with it.
  ASSERT_TRUE(cache.Park({b.selection.partition.Key(), b.selection.token, 10, nullptr}));
  ASSERT_TRUE(cache.Remove(b.selection.partition.Key()).has_value());
  const Waited next = WaitNext(cache, 8 << 20);
  ASSERT_TRUE(next.status.ok());
  EXPECT_EQ(next.next, Next::kSelected);  // partition 0 again, not the dropped batch
  EXPECT_EQ(next.selection.partition.Key(), "1:t:0");
  EXPECT_FALSE(next.selection.last_pack_consumed);
}

TEST(RmtDataCacheCsmAhead, ABatchParkedForAPausedPartitionGoesBackUnseen) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  const Waited first = WaitNext(cache, 0);
  ASSERT_TRUE(cache.Park({"1:t:0", first.selection.token, 10, nullptr}));
  cache.Pause("1:t:0");
  EXPECT_EQ(WaitNext(cache, 0).status.code(), ErrorCode::kAllPartitionFrozen);
  EXPECT_FALSE(cache.IsInUse("1:t:0", first.selection.token));
  cache.Resume("1:t:0");
  const Waited again = WaitNext(cache, 0);
  ASSERT_EQ(again.next, Next::kSelected);
  EXPECT_FALSE(again.selection.last_pack_consumed);  // the broker sends that batch again
}

TEST(RmtDataCacheCsmAhead, ReportsAreParkedWhateverTheBookingsAndCloseDropsAll) {
  RmtDataCacheCsm cache;
  ASSERT_TRUE(cache.Park({"", 0, 0, nullptr}));
  const Waited report = WaitNext(cache, 0);
  ASSERT_EQ(report.next, Next::kParked);
  EXPECT_EQ(report.parked.token, 0u);
  cache.Add(P(1, 0), {});
  const Waited first = WaitNext(cache, 0);
  ASSERT_TRUE(cache.Park({"1:t:0", first.selection.token, 10, nullptr}));
  cache.Close();
  EXPECT_EQ(WaitNext(cache, 0).status.code(), ErrorCode::kClientShutdown);
  EXPECT_FALSE(cache.Park({"1:t:0", first.selection.token, 10, nullptr}));
}


// After an empty fetch, a partition may rest in use: the I/O thread fetches it again
// itself (RestInUse, then ContinueFetch), and no poller is woken for it.
TEST(RmtDataCacheCsmRestInUse, ARestedPartitionIsFetchedAgainWithoutAPoller) {
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  const Waited first = WaitNext(cache, 0);
  ASSERT_EQ(first.next, Next::kSelected);
  EXPECT_FALSE(cache.RestInUse("1:t:0", first.selection.token + 1));  // stale token
  ASSERT_TRUE(cache.RestInUse("1:t:0", first.selection.token));
  // Nothing is selectable meanwhile, and a poll says the partition is resting.
  EXPECT_EQ(WaitNext(cache, 0).status.code(), ErrorCode::kAllPartitionWaiting);
  RmtDataCacheCsm::Selection next;
  ASSERT_TRUE(cache.ContinueFetch("1:t:0", first.selection.token, 0, next));
  EXPECT_EQ(next.partition.Key(), "1:t:0");
  EXPECT_TRUE(next.last_pack_consumed);  // the empty reply settled the batch before
  // The fetch is on its way again: a batch it brings is parked and handed out.
  ASSERT_TRUE(cache.Park({"1:t:0", next.token, 10, nullptr}));
  const Waited taken = WaitNext(cache, 0);
  ASSERT_EQ(taken.next, Next::kParked);
  EXPECT_EQ(taken.parked.token, first.selection.token);
  // A rest that is not current any more (the batch was handed out) is not continued.
  EXPECT_FALSE(cache.ContinueFetch("1:t:0", first.selection.token, 0, next));
}

TEST(RmtDataCacheCsmRestInUse, AResterDoesNotHoldBackOtherPartitionsOrTheBound) {
  // With no fetching ahead, one fetch at a time: a resting partition is not one.
  RmtDataCacheCsm cache;
  cache.Add(P(1, 0), {});
  cache.Add(P(1, 1), {});
  const Waited first = WaitNext(cache, 0);
  ASSERT_TRUE(cache.RestInUse(first.selection.partition.Key(), first.selection.token));
  const Waited second = WaitNext(cache, 0);
  ASSERT_EQ(second.next, Next::kSelected);
  EXPECT_NE(second.selection.partition.Key(), first.selection.partition.Key());
  // Now the other fetch is out and the bound is full: the rester goes to the pollers,
  // idle and consumed, instead of being fetched beyond the bound.
  RmtDataCacheCsm::Selection next;
  EXPECT_FALSE(
      cache.ContinueFetch(first.selection.partition.Key(), first.selection.token, 0, next));
  ASSERT_TRUE(cache.Release(second.selection.partition.Key(), second.selection.token, true,
                            5000ms));
  const Waited again = WaitNext(cache, 0);
  ASSERT_EQ(again.next, Next::kSelected);
  EXPECT_EQ(again.selection.partition.Key(), first.selection.partition.Key());
  EXPECT_TRUE(again.selection.last_pack_consumed);
}

TEST(RmtDataCacheCsmRestInUse, APausedRemovedOrClosedResterIsNotFetched) {
  RmtDataCacheCsm cache;
  for (int i = 0; i < 3; ++i) cache.Add(P(1, i), {});
  std::vector<RmtDataCacheCsm::Selection> rest;
  for (int i = 0; i < 3; ++i) {
    const Waited w = WaitNext(cache, 8 << 20);
    ASSERT_EQ(w.next, Next::kSelected);
    ASSERT_TRUE(cache.RestInUse(w.selection.partition.Key(), w.selection.token));
    rest.push_back(w.selection);
  }
  RmtDataCacheCsm::Selection next;
  // Paused: released, held out of every queue until resumed, then selectable again.
  ASSERT_TRUE(cache.Pause(rest[0].partition.Key()));
  EXPECT_FALSE(cache.ContinueFetch(rest[0].partition.Key(), rest[0].token, 8 << 20, next));
  EXPECT_EQ(WaitNext(cache, 8 << 20).status.code(), ErrorCode::kAllPartitionWaiting);
  ASSERT_TRUE(cache.Resume(rest[0].partition.Key()));
  EXPECT_EQ(WaitNext(cache, 8 << 20).selection.partition.Key(), rest[0].partition.Key());
  // Removed: it leaves as a resting partition does, its last batch settled.
  const auto removed = cache.Remove(rest[1].partition.Key());
  ASSERT_TRUE(removed.has_value());
  EXPECT_FALSE(removed->was_in_use);
  EXPECT_TRUE(removed->last_pack_consumed);
  EXPECT_FALSE(cache.ContinueFetch(rest[1].partition.Key(), rest[1].token, 8 << 20, next));
  // A rest has no batch out, so it never expires as unconfirmed; rest[0]'s new
  // selection does.
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(cache.ExpireUnconfirmed(1ms), std::vector<std::string>{rest[0].partition.Key()});
  cache.Close();
  EXPECT_FALSE(cache.ContinueFetch(rest[2].partition.Key(), rest[2].token, 8 << 20, next));
}

}  // namespace
}  // namespace tubemq::consumer
