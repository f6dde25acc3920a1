// RequestDeadlines: the ordered deadlines behind a connection's single timer.
#include <gtest/gtest.h>

#include "net/request_deadlines.h"

namespace tubemq::net {
namespace {

using namespace std::chrono_literals;
using Clock = RequestDeadlines::Clock;

TEST(RequestDeadlines, AskForARearmOnlyWhenTheEarliestDeadlineMovesEarlier) {
  RequestDeadlines deadlines;
  const auto t0 = Clock::now();
  EXPECT_TRUE(deadlines.Add(1, t0 + 100ms));  // nothing armed yet
  deadlines.Armed(t0 + 100ms);
  EXPECT_FALSE(deadlines.Add(2, t0 + 200ms));  // later: the armed timer covers it
  EXPECT_FALSE(deadlines.Add(3, t0 + 100ms));  // same time: covered too
  EXPECT_TRUE(deadlines.Add(4, t0 + 50ms));    // earlier: re-arm
  deadlines.Armed(t0 + 50ms);
  EXPECT_EQ(deadlines.size(), 4u);
}

TEST(RequestDeadlines, ExpiredRequestsComeOutInDeadlineOrderAndOnlyOnce) {
  RequestDeadlines deadlines;
  const auto t0 = Clock::now();
  deadlines.Add(7, t0 + 300ms);
  deadlines.Add(8, t0 + 100ms);
  deadlines.Add(9, t0 + 200ms);
  deadlines.Add(5, t0 + 100ms);
  std::vector<int32_t> out;
  deadlines.PopExpired(t0 + 50ms, out);
  EXPECT_TRUE(out.empty());
  deadlines.PopExpired(t0 + 200ms, out);
  EXPECT_EQ(out, (std::vector<int32_t>{5, 8, 9}));
  out.clear();
  deadlines.PopExpired(t0 + 200ms, out);
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(deadlines.Earliest().has_value());
  EXPECT_EQ(*deadlines.Earliest(), t0 + 300ms);
}

TEST(RequestDeadlines, RemovedRequestsNeverExpire) {
  RequestDeadlines deadlines;
  const auto t0 = Clock::now();
  deadlines.Add(1, t0 + 100ms);
  deadlines.Add(2, t0 + 200ms);
  deadlines.Remove(1, t0 + 100ms);
  deadlines.Remove(3, t0 + 100ms);  // unknown: harmless
  std::vector<int32_t> out;
  deadlines.PopExpired(t0 + 1s, out);
  EXPECT_EQ(out, (std::vector<int32_t>{2}));
  EXPECT_TRUE(deadlines.empty());
  EXPECT_FALSE(deadlines.Earliest().has_value());
}

}  // namespace
}  // namespace tubemq::net
