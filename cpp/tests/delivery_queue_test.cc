// The delivery queue between the I/O threads and Python (bindings/deliveries.h): pure
// C++, so tested here. A drain lingers for more outcomes, unless a thread waits for one,
// or a thread waits for all of them (a flush, a sender waiting for a place) and none is
// still to come.
#include "deliveries.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace tubemq::bindings {
namespace {

using std::chrono::milliseconds;

// Long enough that a drain which lingers cannot be mistaken for one that does not.
constexpr milliseconds kLongLinger{10000};

Delivery Stored(uint64_t token, const std::string& topic, int32_t partition) {
  SendResult result;
  result.topic = topic;
  result.partition_id = partition;
  result.partition_key = "1:" + topic + ":" + std::to_string(partition);
  result.broker_address = "127.0.0.1:8123";
  result.message_id = static_cast<int64_t>(token);
  return Delivery{token, Status(), std::move(result)};
}

std::future<std::vector<Delivery>> DrainElsewhere(DeliveryQueue& queue) {
  return std::async(std::launch::async,
                    [&queue] { return queue.Drain(milliseconds(5000), 100); });
}

// A drain that took an outcome pushed now and lingers for more: `others` sends, admitted
// alongside, are still in flight (none: outcomes must have come often, ArriveOften).
std::future<std::vector<Delivery>> LingeringDrain(DeliveryQueue& queue, uint64_t token,
                                                  int others = 1) {
  for (int i = 0; i <= others; ++i) EXPECT_TRUE(queue.TryAdmit());
  queue.Push(Stored(token, "topic_a", 0));
  auto drained = DrainElsewhere(queue);
  EXPECT_EQ(drained.wait_for(milliseconds(200)), std::future_status::timeout);
  return drained;
}

TEST(DeliveryQueue, ADrainLingersForMoreWhileNobodyWaits) {
  DeliveryQueue queue(100, kLongLinger);
  auto drained = LingeringDrain(queue, 1);
  queue.Wake();
  ASSERT_EQ(drained.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(drained.get().size(), 1u);
}

TEST(DeliveryQueue, AThreadThatStartsWaitingEndsTheLinger) {
  DeliveryQueue queue(100, kLongLinger);
  auto drained = LingeringDrain(queue, 1);
  queue.Waiting(+1);
  ASSERT_EQ(drained.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(drained.get().size(), 1u);
}

TEST(DeliveryQueue, NothingLingersWhileAThreadWaitsAndLingeringResumesAfter) {
  DeliveryQueue queue(100, kLongLinger);
  queue.Waiting(+1);
  ASSERT_TRUE(queue.TryAdmit());
  queue.Push(Stored(1, "topic_a", 0));
  auto at_once = DrainElsewhere(queue);
  ASSERT_EQ(at_once.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(at_once.get().size(), 1u);
  queue.Settled();
  ASSERT_TRUE(queue.TryWaiting(-1));
  auto lingering = LingeringDrain(queue, 2);
  queue.Wake();
  ASSERT_EQ(lingering.wait_for(milliseconds(5000)), std::future_status::ready);
}

TEST(DeliveryQueue, DuringAFlushADrainStopsLingeringWhenTheLastOutcomeStillToComeArrives) {
  DeliveryQueue queue(100, kLongLinger);
  queue.Flushing(+1);
  auto drained = LingeringDrain(queue, 1);  // one more send is in flight
  queue.Push(Stored(2, "topic_a", 1));
  ASSERT_EQ(drained.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(drained.get().size(), 2u);
  // produce() then flush(): the only send's outcome is handed out at once.
  queue.Settled();
  ASSERT_TRUE(queue.TryAdmit());
  queue.Push(Stored(3, "topic_a", 0));
  auto at_once = DrainElsewhere(queue);
  ASSERT_EQ(at_once.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(at_once.get().size(), 1u);
}

// Outcomes handed out as a flush gets them, one after another, well within the linger:
// the queue learns that they come often.
void ArriveOften(DeliveryQueue& queue, uint64_t first_token, int count) {
  queue.Flushing(+1);
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(queue.TryAdmit());
    queue.Push(Stored(first_token + i, "topic_a", 0));
    ASSERT_EQ(queue.Drain(milliseconds(5000), 100).size(), 1u);
    queue.Settled();
  }
  queue.Flushing(-1);
}

TEST(DeliveryQueue, OutcomesThatComeOftenLingerEvenWhenAllAreInUntilAFlushBegins) {
  // 1 000 msg/s: each send's outcome is in before the next send. A drain per outcome was
  // a GIL hand-over and a wake-up of the delivery thread per message.
  DeliveryQueue queue(100, kLongLinger);
  ArriveOften(queue, 1, 4);
  auto drained = LingeringDrain(queue, 5, 0);
  queue.Flushing(+1);  // nothing more is to come: the flush ends the linger at once
  ASSERT_EQ(drained.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(drained.get().size(), 1u);
  queue.Settled();
  ASSERT_TRUE(queue.TryFlushing(-1));
  // The flush is over: the next outcome lingers again.
  auto lingering = LingeringDrain(queue, 6, 0);
  queue.Wake();
  ASSERT_EQ(lingering.wait_for(milliseconds(5000)), std::future_status::ready);
}

TEST(DeliveryQueue, AtASlowTrickleEveryOutcomeIsHandedOutAtOnce) {
  // A linger would gather nothing there and only delay the callbacks.
  const milliseconds linger(2000);
  DeliveryQueue queue(100, linger);
  ASSERT_TRUE(queue.TryAdmit());
  queue.Push(Stored(1, "topic_a", 0));  // the first: nothing known of the pace yet
  auto first = DrainElsewhere(queue);
  ASSERT_EQ(first.wait_for(linger / 2), std::future_status::ready);
  EXPECT_EQ(first.get().size(), 1u);
  queue.Settled();
  std::this_thread::sleep_for(linger * 6 / 10);  // more than half the linger apart
  ASSERT_TRUE(queue.TryAdmit());
  queue.Push(Stored(2, "topic_a", 0));
  auto second = DrainElsewhere(queue);
  ASSERT_EQ(second.wait_for(linger / 2), std::future_status::ready);
  EXPECT_EQ(second.get().size(), 1u);
}

TEST(DeliveryQueue, ASenderWaitingForAPlaceEndsTheLingerOnceEveryOutcomeIsIn) {
  // max_in_flight 1: the one place frees only once its outcome is settled, so a
  // lingering drain would hold the sender up for the whole linger per send.
  DeliveryQueue queue(1, kLongLinger);
  ArriveOften(queue, 1, 4);
  auto drained = LingeringDrain(queue, 5, 0);
  auto admitted = std::async(std::launch::async,
                             [&queue] { return queue.WaitAdmit(milliseconds(5000)); });
  ASSERT_EQ(drained.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(drained.get().size(), 1u);
  queue.Settled();  // Python completed the outcome: its place is free
  ASSERT_EQ(admitted.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_TRUE(admitted.get());
}

TEST(DeliveryQueue, ASendThatNeverReachedTheCoreIsNotLingeredForByAFlush) {
  DeliveryQueue queue(100, kLongLinger);
  queue.Flushing(+1);
  auto drained = LingeringDrain(queue, 1);
  queue.Retract();  // the other send raised before it was handed over
  ASSERT_EQ(drained.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(drained.get().size(), 1u);
}

TEST(DeliveryQueue, EachOutcomeKeepsWhereItsSendWasStored) {
  DeliveryQueue queue(100, milliseconds(0));
  const std::vector<std::pair<std::string, int32_t>> places = {
      {"topic_a", 0}, {"topic_a", 1}, {"topic_b_is_longer_than_inline", 0}, {"topic_a", 0}};
  for (size_t i = 0; i < places.size(); ++i) {
    ASSERT_TRUE(queue.TryAdmit());
    queue.Push(Stored(i + 1, places[i].first, places[i].second));
  }
  ASSERT_TRUE(queue.TryAdmit());
  queue.Push(Delivery{9, Status(ErrorCode::kRequestTimeout, "no answer"), SendResult()});
  std::vector<Delivery> drained = queue.Drain(milliseconds(1000), 100);
  ASSERT_EQ(drained.size(), places.size() + 1);
  for (size_t i = 0; i < places.size(); ++i) {
    const SendResult result = drained[i].TakeResult();
    EXPECT_EQ(result.topic, places[i].first);
    EXPECT_EQ(result.partition_id, places[i].second);
    EXPECT_EQ(result.partition_key,
              "1:" + places[i].first + ":" + std::to_string(places[i].second));
    EXPECT_EQ(result.broker_address, "127.0.0.1:8123");
    EXPECT_EQ(result.message_id, static_cast<int64_t>(i + 1));
  }
  EXPECT_EQ(drained[0].place, drained[3].place);  // one record per partition
  EXPECT_FALSE(drained.back().status.ok());
  EXPECT_EQ(drained.back().place, nullptr);
}

}  // namespace
}  // namespace tubemq::bindings
