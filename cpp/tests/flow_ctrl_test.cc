// Flow control (behaviour.md §6): rule parsing and validation, evaluation in GMT+8,
// update semantics, and the per-partition delays of the worked example in §6.6.
#include <gtest/gtest.h>

#include "flowctrl/flow_ctrl_rule_handler.h"
#include "flowctrl/partition_pacer.h"

namespace tubemq::flowctrl {
namespace {

using namespace std::chrono_literals;  // NOLINT(build/namespaces): delays read as 20ms
using std::chrono::microseconds;

constexpr char kWorkedExample[] = R"([
 {"type":0,"rule":[{"start":"09:00","end":"18:30","dltInM":2048,"limitInM":10,"freqInMs":800}]},
 {"type":1,"rule":[{"zeroCnt":2,"freqInMs":250},{"zeroCnt":6,"freqInMs":1500}]},
 {"type":3,"rule":[{"normFreqInMs":50,"filterFreqInMs":120,"minDataFilterFreqInMs":600}]}
])";

// Epoch milliseconds of hh:mm:ss.ms GMT+8 on 2026-11-22.
int64_t Gmt8(int hour, int minute, int second = 0, int ms = 0) {
  const int64_t midnight_gmt8 = 1795276800000;  // 2026-11-22 00:00 GMT+8 = 11-21 16:00 UTC
  return midnight_gmt8 + ((hour * 60 + minute) * 60 + second) * 1000 + ms;
}

RuleSnapshot GroupRules(const char* json) {
  FlowCtrlRuleHandler handler;
  EXPECT_TRUE(handler.UpdateGroup(7, json, 201));
  return handler.Snapshot();
}

TEST(FlowCtrlRules, TimeOfDayIsGmtPlus8) {
  EXPECT_EQ(Gmt8TimeOfDay(Gmt8(10, 15)), 1015);
  EXPECT_EQ(Gmt8TimeOfDay(Gmt8(0, 0)), 0);
  EXPECT_EQ(Gmt8TimeOfDay(Gmt8(23, 59, 59)), 2359);
}

TEST(FlowCtrlRules, WorkedExampleDerivedValues) {
  FlowCtrlRules rules;
  ASSERT_TRUE(FlowCtrlRules::Parse(kWorkedExample, rules).ok());
  const auto limit = rules.DataLimitFor(3000000, 1015);
  ASSERT_TRUE(limit.has_value());
  EXPECT_EQ(limit->bytes_per_minute, 10485760);
  EXPECT_EQ(limit->pause_ms, 800);
  EXPECT_FALSE(rules.DataLimitFor(2048, 1015).has_value());      // not above the threshold
  EXPECT_FALSE(rules.DataLimitFor(3000000, 2000).has_value());   // outside the window
  EXPECT_TRUE(rules.DataLimitFor(3000000, 1830).has_value());    // the end minute counts
  EXPECT_EQ(rules.FrequencyPause(1, 400), 400);
  EXPECT_EQ(rules.FrequencyPause(2, 400), 250);
  EXPECT_EQ(rules.FrequencyPause(5, 400), 250);
  EXPECT_EQ(rules.FrequencyPause(6, 400), 1500);
  EXPECT_EQ(rules.low_fetch().normal_ms, 50);
  EXPECT_EQ(rules.low_fetch().filter_ms, 120);
  EXPECT_EQ(rules.low_fetch().slow_filter_ms, 600);
}

TEST(FlowCtrlRules, InvalidRecordsRejectTheWholeText) {
  FlowCtrlRules rules;
  for (const char* bad : {
           "{}", "[1]", R"([{"type":9,"rule":[]}])",
           R"([{"type":0,"rule":[{"start":"18:00","end":"09:00","dltInM":30,"limitInM":1,"freqInMs":300}]}])",
           R"([{"type":0,"rule":[{"start":"09:00","end":"10:00","dltInM":20,"limitInM":1,"freqInMs":300}]}])",
           R"([{"type":0,"rule":[{"start":"09:00","end":"10:00","dltInM":30,"limitInM":1,"freqInMs":100}]}])",
           R"([{"type":1,"rule":[{"zeroCnt":0,"freqInMs":100}]}])",
           R"([{"type":3,"rule":[{"filterFreqInMs":100}]}])",
           R"([{"type":3,"rule":[{"filterFreqInMs":500,"minDataFilterFreqInMs":100}]}])",
           "[{\"type\":1,"}) {
    const Status status = FlowCtrlRules::Parse(bad, rules);
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(FlowCtrlRules::Parse(" ", rules).ok());
  EXPECT_TRUE(rules.empty());
  // The deprecated type 2 is skipped unread.
  ASSERT_TRUE(FlowCtrlRules::Parse(R"([{"type":2,"rule":"whatever"}])", rules).ok());
  EXPECT_TRUE(rules.empty());
}

TEST(FlowCtrlRuleHandler, BadJsonKeepsTheOldRulesAndId) {
  FlowCtrlRuleHandler handler;
  ASSERT_TRUE(handler.UpdateGroup(7, kWorkedExample, 201));
  EXPECT_EQ(handler.group_id(), 7);
  EXPECT_EQ(handler.qry_priority_id(), 201);
  EXPECT_FALSE(handler.UpdateGroup(7, "[]", 201));  // same id: nothing to do
  EXPECT_FALSE(handler.UpdateGroup(8, "not json", 301));
  EXPECT_EQ(handler.group_id(), 7);
  EXPECT_EQ(handler.qry_priority_id(), 201);
  EXPECT_TRUE(handler.Snapshot().group->has_frequency_rules());
  EXPECT_TRUE(handler.GroupUnderFlowControl(Gmt8(10, 15)));
  EXPECT_FALSE(handler.GroupUnderFlowControl(Gmt8(20, 0)));
  // Disabled on the server (-2): the rules go.
  EXPECT_TRUE(handler.UpdateGroup(kNoRulesId, "", kNoRulesId));
  EXPECT_TRUE(handler.Snapshot().group->empty());
  EXPECT_TRUE(handler.UpdateDefault(3, R"([{"type":1,"rule":[{"zeroCnt":1,"freqInMs":90}]}])"));
  EXPECT_EQ(handler.default_id(), 3);
}

TEST(PartitionPacer, WorkedExampleA_BudgetThenPause) {
  const RuleSnapshot rules = GroupRules(kWorkedExample);
  PartitionPacer pacer(/*filter_consumer=*/false);
  FetchOutcome opening;  // the release that opens the minute: lag known, nothing fetched
  opening.code = 404;
  opening.lag = 3000000;
  opening.default_delay_ms = 400;
  pacer.DelayAfter(opening, rules, Gmt8(10, 15, 0));
  FetchOutcome first;
  first.batch_bytes = 400000;
  first.lag = 3000000;
  first.processing_ms = 30;
  EXPECT_EQ(pacer.DelayAfter(first, rules, Gmt8(10, 15, 1)), 20ms);  // 50 ms pace - 30 ms
  FetchOutcome second;
  second.batch_bytes = 500000;
  EXPECT_EQ(pacer.DelayAfter(second, rules, Gmt8(10, 15, 2)), 800ms);  // slice budget spent
  // A new slice: pacing is back to 50 ms.
  FetchOutcome third;
  third.batch_bytes = 1000;
  EXPECT_EQ(pacer.DelayAfter(third, rules, Gmt8(10, 15, 6)), 50ms);
}

TEST(PartitionPacer, WorkedExampleB_FilterConsumers) {
  const RuleSnapshot rules = GroupRules(kWorkedExample);
  PartitionPacer pacer(/*filter_consumer=*/true);
  FetchOutcome batch;
  batch.batch_bytes = 1000;
  batch.lag = 3000000;
  EXPECT_EQ(pacer.DelayAfter(batch, rules, Gmt8(10, 15, 1)), 120ms);
  batch.require_slow = true;
  EXPECT_EQ(pacer.DelayAfter(batch, rules, Gmt8(10, 15, 1, 200)), 600ms);
}

TEST(PartitionPacer, WorkedExampleC_EmptyFetchesBackOff) {
  const RuleSnapshot rules = GroupRules(kWorkedExample);
  PartitionPacer pacer(false);
  FetchOutcome empty;
  empty.code = 404;
  empty.default_delay_ms = 400;
  std::vector<microseconds> delays;
  for (int i = 0; i < 7; ++i) delays.push_back(pacer.DelayAfter(empty, rules, Gmt8(12, 0, i)));
  EXPECT_EQ(delays, (std::vector<microseconds>{400ms, 250ms, 250ms, 250ms, 250ms, 1500ms, 1500ms}));
  FetchOutcome data;
  data.batch_bytes = 10;
  pacer.DelayAfter(data, rules, Gmt8(12, 0, 8));
  EXPECT_EQ(pacer.empty_fetches(), 0);  // any data resets the count
}

// Adaptive pacing (issue 26): without frequency rules, an empty streak backs off from
// half a millisecond towards msg_not_found_wait_ms, and data snaps it back.
RuleSnapshot NoRules() { return FlowCtrlRuleHandler().Snapshot(); }

FetchOutcome Empty(int32_t ceiling_ms = 400) {
  FetchOutcome empty;
  empty.code = 404;
  empty.default_delay_ms = ceiling_ms;
  return empty;
}

TEST(PartitionPacer, AnEmptyStreakBacksOffToTheCeiling) {
  PartitionPacer pacer(false);
  std::vector<microseconds> delays;
  for (int i = 0; i < 13; ++i) delays.push_back(pacer.DelayAfter(Empty(), NoRules(), i));
  EXPECT_EQ(delays, (std::vector<microseconds>{500us, 1ms, 2ms, 4ms, 8ms, 16ms, 32ms, 64ms,
                                               128ms, 256ms, 400ms, 400ms, 400ms}));
  // A long idle streak stays at the ceiling (no overflow of the doubling).
  for (int i = 0; i < 100; ++i) pacer.DelayAfter(Empty(), NoRules(), 20 + i);
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 200), 400ms);
}

TEST(PartitionPacer, DataSnapsTheBackOffBackAndIsFetchedAgainAtOnce) {
  PartitionPacer pacer(false);
  for (int i = 0; i < 12; ++i) pacer.DelayAfter(Empty(), NoRules(), i);
  FetchOutcome data;
  data.batch_bytes = 100;
  EXPECT_EQ(pacer.DelayAfter(data, NoRules(), 20), 0ms);  // a partition with data: at once
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 21), 500us);  // the streak starts again
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 22), 1ms);
}

FetchOutcome Data() {
  FetchOutcome data;
  data.batch_bytes = 100;
  return data;
}

TEST(PartitionPacer, AtASteadyPaceEmptyFetchesRestASixteenthOfTheUsualGap) {
  PartitionPacer pacer(false);
  for (int64_t t = 1000; t <= 1016; t += 4) EXPECT_EQ(pacer.DelayAfter(Data(), NoRules(), t), 0ms);
  // Data every 4 ms: 0.25 ms apart (not 0.5, 1, 2, 4 ms) while the next message is due,
  // then an eighth of the quiet time once that is longer.
  std::vector<microseconds> delays;
  for (int64_t t = 1017; t <= 1021; ++t) delays.push_back(pacer.DelayAfter(Empty(), NoRules(), t));
  EXPECT_EQ(delays, (std::vector<microseconds>{250us, 250us, 375us, 500us, 625us}));
  // Quiet for many gaps: it backs off with its quiet time, up to the ceiling.
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 1016 + 80), 10ms);
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 1016 + 160), 20ms);
  for (int i = 0; i < 5; ++i) pacer.DelayAfter(Empty(), NoRules(), 1200 + i);
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 1016 + 8000), 400ms);
  // The ceiling a user set holds here too.
  EXPECT_EQ(PacedEmptyWait(3, 0, 4ms, 1ms), 0us);
}

TEST(PartitionPacer, AfterAnIdleSpellTheStreakDoublesAsWithoutAPace) {
  PartitionPacer pacer(false);
  for (int64_t t = 1000; t <= 1016; t += 4) pacer.DelayAfter(Data(), NoRules(), t);
  // An hour without data counts as a gap of kLongestDataGapMs: the usual gap is then
  // about a quarter of a second, and the streak's doubling is the shorter rest.
  pacer.DelayAfter(Data(), NoRules(), 1016 + 3'600'000);
  std::vector<microseconds> delays;
  for (int64_t t = 1; t <= 5; ++t) {
    delays.push_back(pacer.DelayAfter(Empty(), NoRules(), 1016 + 3'600'000 + t));
  }
  EXPECT_EQ(delays, (std::vector<microseconds>{500us, 1ms, 2ms, 4ms, 8ms}));
}

TEST(PartitionPacer, DataWithinOneMillisecondRestsNoLessThanTheShortestPacedRest) {
  PartitionPacer pacer(false);
  for (int i = 0; i < 4; ++i) pacer.DelayAfter(Data(), NoRules(), 5000);  // gaps of 0 ms
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 5000), kShortestPacedRest);
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 5001), kShortestPacedRest);
}

TEST(PartitionPacer, RestsEndOnASharedGridWithinHalfAStep) {
  using std::chrono::steady_clock;
  const steady_clock::time_point grid_point(std::chrono::seconds(1000));  // on the grid
  // Two partitions whose 250 us rests began 40 us apart end on one step: one wake-up.
  EXPECT_EQ(RestEnd(grid_point + 10us, 250us), RestEnd(grid_point + 50us, 250us));
  EXPECT_EQ(RestEnd(grid_point + 10us, 250us), grid_point + 250us);
  // Nearest, not later: a rest ends at most half a step early or late.
  static_assert(kRestGrid == 125us);  // half a step: 62.5 us
  EXPECT_EQ(RestEnd(grid_point, 312us), grid_point + 250us);
  EXPECT_EQ(RestEnd(grid_point, 313us), grid_point + 375us);
  for (microseconds offset = 0us; offset < 2 * kRestGrid; offset += 7us) {
    const steady_clock::time_point now = grid_point + offset;
    for (const microseconds rest : {1us, 100us, 250us, 600us, 50'000us}) {
      const steady_clock::time_point end = RestEnd(now, rest);
      EXPECT_GE(end, now);  // never in the past
      EXPECT_LE(2 * std::chrono::abs(end - (now + rest)), kRestGrid);
      EXPECT_EQ((end.time_since_epoch() % kRestGrid).count() == 0 || end == now, true);
    }
  }
}

// A 200 that read to the end of the index, with `messages` messages.
FetchOutcome CaughtUp(int64_t messages) {
  FetchOutcome read;
  read.batch_bytes = 100 * messages;
  read.messages = messages;
  read.caught_up = true;
  return read;
}

TEST(PartitionPacer, ABusyPartitionThatCaughtUpRestsUnderAMillisecond) {
  EXPECT_EQ(CaughtUpRest(CaughtUp(2), 400), kCaughtUpRest);
  EXPECT_EQ(CaughtUpRest(CaughtUp(40), 400), microseconds(600));
  // A trickle, one message per batch: fetched again at once, as is a partition whose
  // index holds more to read (data waiting), or one the broker let escape flow control.
  EXPECT_EQ(CaughtUpRest(CaughtUp(1), 400), microseconds(0));
  FetchOutcome behind = CaughtUp(40);
  behind.caught_up = false;
  EXPECT_EQ(CaughtUpRest(behind, 400), microseconds(0));
  FetchOutcome escaped = CaughtUp(40);
  escaped.escaped = true;
  EXPECT_EQ(CaughtUpRest(escaped, 400), microseconds(0));
  // Never longer than the ceiling a user set (msg_not_found_wait_ms), nor for a refusal.
  EXPECT_EQ(CaughtUpRest(CaughtUp(40), 0), microseconds(0));
  FetchOutcome refused = CaughtUp(40);
  refused.code = 404;
  EXPECT_EQ(CaughtUpRest(refused, 400), microseconds(0));
  // The pacer itself still says "at once" for such a batch, and its empty streak starts
  // afresh: the rest is taken before an empty fetch, not counted as one.
  PartitionPacer pacer(false);
  for (int i = 0; i < 5; ++i) pacer.DelayAfter(Empty(), NoRules(), i);
  EXPECT_EQ(pacer.DelayAfter(CaughtUp(3), NoRules(), 10), 0ms);
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 11), 500us);
}

// A 200 that found only the neighbouring partitions' entries of a shared store, at the
// end of the index: nothing new, paced as an empty fetch, yet still bound by the limits.
FetchOutcome NothingNew() {
  FetchOutcome read;
  read.nothing_new = true;
  read.default_delay_ms = 400;
  return read;
}

TEST(PartitionPacer, ANothingNewReadGoesOnWhileActiveAndBacksOffWhenQuiet) {
  PartitionPacer pacer(false);
  // Never had data: quiet for ever, so the ceiling.
  EXPECT_EQ(pacer.DelayAfter(NothingNew(), NoRules(), 5000), 400ms);
  FetchOutcome data;
  data.batch_bytes = 100;
  EXPECT_EQ(pacer.DelayAfter(data, NoRules(), 10000), 0ms);
  // Active (data 10 ms ago): on at once, and the empty streak starts afresh after it.
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 10005), 500us);
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 10007), 1ms);
  EXPECT_EQ(pacer.DelayAfter(NothingNew(), NoRules(), 10010), 0ms);
  EXPECT_EQ(pacer.DelayAfter(Empty(), NoRules(), 10011), 500us);
  // Quiet: a quarter of the quiet time, up to the ceiling, however busy the neighbours.
  EXPECT_EQ(pacer.DelayAfter(NothingNew(), NoRules(), 10200), 50ms);
  EXPECT_EQ(pacer.DelayAfter(NothingNew(), NoRules(), 10800), 200ms);
  EXPECT_EQ(pacer.DelayAfter(NothingNew(), NoRules(), 20000), 400ms);
  // An operator's frequency rules see it as an empty fetch.
  PartitionPacer ruled(false);
  EXPECT_EQ(ruled.DelayAfter(NothingNew(), GroupRules(kWorkedExample), Gmt8(12, 0, 0)), 400ms);
}

TEST(PartitionPacer, ANothingNewReadStillAnswersToTheByteLimits) {
  // The worked example's data limit: over the slice budget, the limit's pause applies,
  // not the empty streak's first half millisecond; escFlowCtrl still means at once.
  const RuleSnapshot rules = GroupRules(kWorkedExample);
  PartitionPacer pacer(false);
  FetchOutcome opening = Empty();
  opening.lag = 3000000;
  pacer.DelayAfter(opening, rules, Gmt8(10, 15, 0));
  FetchOutcome big;
  big.batch_bytes = 900000;
  pacer.DelayAfter(big, rules, Gmt8(10, 15, 1));
  EXPECT_EQ(pacer.DelayAfter(NothingNew(), rules, Gmt8(10, 15, 2)), 800ms);
  FetchOutcome escaped = NothingNew();
  escaped.escaped = true;
  EXPECT_EQ(pacer.DelayAfter(escaped, rules, Gmt8(10, 15, 3)), 0ms);
}

TEST(PartitionPacer, TheCeilingIsHonouredAndStateIsPerPartition) {
  PartitionPacer busy(false), idle(false);
  for (int i = 0; i < 20; ++i) {
    EXPECT_LE(idle.DelayAfter(Empty(50), NoRules(), i), 50ms);
  }
  EXPECT_EQ(idle.DelayAfter(Empty(50), NoRules(), 30), 50ms);
  // The other partition's streak is its own.
  EXPECT_EQ(busy.DelayAfter(Empty(50), NoRules(), 31), 500us);
  // A ceiling of 0 (msg_not_found_wait_ms=0) never waits.
  PartitionPacer eager(false);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(eager.DelayAfter(Empty(0), NoRules(), i), 0ms);
}

TEST(PartitionPacer, AnOperatorsFrequencyRulesAreObeyedAsWritten) {
  // The worked example's type-1 rules: below their first count the full wait applies,
  // not the adaptive one (WorkedExampleC above gives the whole sequence).
  PartitionPacer pacer(false);
  EXPECT_EQ(pacer.DelayAfter(Empty(), GroupRules(kWorkedExample), Gmt8(12, 0, 0)), 400ms);
}

TEST(PartitionPacer, WorkedExampleD_OutsideTheWindowOnlyLowFetchPacing) {
  const RuleSnapshot rules = GroupRules(kWorkedExample);
  PartitionPacer pacer(false);
  FetchOutcome batch;
  batch.batch_bytes = 5 * 1024 * 1024;
  batch.lag = 3000000;
  EXPECT_EQ(pacer.DelayAfter(batch, rules, Gmt8(20, 0, 0)), 50ms);
  EXPECT_EQ(pacer.DelayAfter(batch, rules, Gmt8(20, 0, 1)), 50ms);
}

TEST(PartitionPacer, WorkedExampleE_BrokerLimitUsesItsOwnDelay) {
  const RuleSnapshot rules = GroupRules(kWorkedExample);
  PartitionPacer pacer(false);
  FetchOutcome limited;
  limited.code = 452;
  limited.default_delay_ms = 800;
  EXPECT_EQ(pacer.DelayAfter(limited, rules, Gmt8(10, 0)), 800ms);
}

TEST(PartitionPacer, NoRulesMeansTheCodesOwnDelay) {
  FlowCtrlRuleHandler handler;
  PartitionPacer pacer(false);
  FetchOutcome batch;
  batch.batch_bytes = 100;
  EXPECT_EQ(pacer.DelayAfter(batch, handler.Snapshot(), Gmt8(10, 0)), 0ms);
  FetchOutcome closed;  // 403: the code's own delay, whatever the streak
  closed.code = 403;
  closed.default_delay_ms = 2000;
  EXPECT_EQ(pacer.DelayAfter(closed, handler.Snapshot(), Gmt8(10, 1)), 2000ms);
  // A 404's own delay is the ceiling of the empty streak's back-off (above).
  for (int i = 0; i < 12; ++i) pacer.DelayAfter(Empty(), handler.Snapshot(), Gmt8(10, 2, i));
  EXPECT_EQ(pacer.DelayAfter(Empty(), handler.Snapshot(), Gmt8(10, 3)), 400ms);
}

}  // namespace
}  // namespace tubemq::flowctrl
