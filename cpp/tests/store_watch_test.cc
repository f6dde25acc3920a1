// StoreWatch (consumer/store_watch.h): a short rest after "nothing new" ends early once
// a reply for another partition of the same store shows the store's index grew; the
// replies also tell whether the store is written to steadily.
#include "consumer/store_watch.h"

#include <gtest/gtest.h>

namespace tubemq::consumer {
namespace {

using Wakes = std::vector<StoreWatch::Wake>;

TEST(StoreWatch, ASiblingsReplyPastTheEndWakesTheRestingPartitionsOnce) {
  StoreWatch watch;
  watch.Reached("1:t:0", 280);  // the index ends at 280
  watch.Rest("1:t:1", 11);
  watch.Rest("1:t:2", 12);
  // Nothing new since the rests began: they go on.
  EXPECT_EQ(watch.Reached("1:t:0", 280), Wakes{});
  // The index grew: both resting siblings fetch now, each once.
  EXPECT_EQ(watch.Reached("1:t:0", 308), (Wakes{{"1:t:1", 11}, {"1:t:2", 12}}));
  EXPECT_EQ(watch.Reached("1:t:3", 336), Wakes{});
}

TEST(StoreWatch, ARestIsEndedByItsTimerOrBySiblingsNeverByBoth) {
  StoreWatch watch;
  watch.Reached("1:t:0", 28);
  const uint64_t timed = watch.Rest("1:t:1", 5);
  EXPECT_TRUE(watch.Expire("1:t:1", timed));   // the timer ran out first: it fetches
  EXPECT_FALSE(watch.Expire("1:t:1", timed));  // and only once
  EXPECT_EQ(watch.Reached("1:t:0", 56), Wakes{});  // no longer resting: not woken
  const uint64_t woken = watch.Rest("1:t:1", 6);
  EXPECT_EQ(watch.Reached("1:t:0", 84), (Wakes{{"1:t:1", 6}}));
  EXPECT_FALSE(watch.Expire("1:t:1", woken));  // woken first: the timer finds it over
}

TEST(StoreWatch, ALaterRestReplacesAnEarlierOneOfThePartition) {
  StoreWatch watch;
  const uint64_t first = watch.Rest("1:t:1", 7);
  const uint64_t second = watch.Rest("1:t:1", 8);
  EXPECT_FALSE(watch.Expire("1:t:1", first));  // the earlier timer ends nothing
  EXPECT_TRUE(watch.Expire("1:t:1", second));
}

TEST(StoreWatch, OnlyTheSameStoreOfTheSameTopicOnTheSameBrokerIsASibling) {
  StoreWatch watch;
  watch.Rest("1:t:1", 1);
  watch.Rest("2:t:1", 2);      // the same topic on another broker: another store
  watch.Rest("1:tt:1", 3);     // another topic on the same broker
  watch.Rest("1:t:10001", 5);  // the topic's second store on that broker (id 1*10000+1)
  EXPECT_EQ(watch.Reached("1:t:0", 28), (Wakes{{"1:t:1", 1}}));
  // A partition's own reply does not wake it: it is fetching, not resting.
  watch.Rest("1:t:0", 4);
  EXPECT_EQ(watch.Reached("1:t:0", 56), Wakes{});
  EXPECT_EQ(watch.Reached("2:t:0", 28), (Wakes{{"2:t:1", 2}}));
  EXPECT_EQ(watch.Reached("1:t:10000", 28), (Wakes{{"1:t:10001", 5}}));
}

TEST(StoreWatch, ARestBegunBeforeAnyOffsetWasKnownEndsAtTheFirstOne) {
  StoreWatch watch;
  watch.Rest("1:t:1", 9);
  EXPECT_EQ(watch.Reached("1:t:0", 0), (Wakes{{"1:t:1", 9}}));
}

TEST(StoreWatch, AStoreIsBusyOnceItHasGrownSteadilyAndUntilItIsQuiet) {
  using std::chrono::milliseconds;
  StoreWatch watch;
  const StoreWatch::Clock::time_point start{};
  bool busy = true;
  // Any reply of the store answers, whether it shows growth or not (here: no offsets
  // known before, so the first is a growth after a quiet spell).
  watch.Reached("1:t:0", 28, start, &busy);
  EXPECT_FALSE(busy);
  watch.Reached("1:t:2", 56, start + milliseconds(1), &busy);
  EXPECT_FALSE(busy);  // a burst after a quiet spell: not yet steady writes
  for (int ms = 2; ms <= 30; ms += 2) {
    watch.Reached("1:t:0", 56 + 28 * ms, start + milliseconds(ms));
  }
  watch.Reached("1:t:1", 56, start + milliseconds(30), &busy);  // no growth of its own
  EXPECT_TRUE(busy);
  watch.Reached("2:t:1", 28, start + milliseconds(30), &busy);  // another broker's store
  EXPECT_FALSE(busy);
  // No growth for a while: quiet again, and a new burst starts the count afresh.
  watch.Reached("1:t:1", 56, start + milliseconds(30) + StoreWatch::kQuietStore, &busy);
  EXPECT_FALSE(busy);
  watch.Reached("1:t:0", 2000, start + milliseconds(500), &busy);
  EXPECT_FALSE(busy);
}

}  // namespace
}  // namespace tubemq::consumer
