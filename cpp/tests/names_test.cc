// The name rules of tubemq/names.h, which both the C++ consumer and the Python facade
// use (tests/unit/test_rules.py checks that the two refuse names in the same words).
#include "tubemq/names.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace tubemq {
namespace {

TEST(Names, Topics) {
  for (const char* good : {"t1", "Topic_2", "ab"}) EXPECT_EQ(names::TopicProblem(good), "") << good;
  EXPECT_EQ(names::TopicProblem(std::string(64, 'a')), "");
  for (const char* bad : {"", "t", "1t", "_t", "t-1", "t:1", "t 1", "t\xc3\xa9"}) {
    EXPECT_NE(names::TopicProblem(bad), "") << bad;
  }
  EXPECT_NE(names::TopicProblem(std::string(65, 'a')), "");
  EXPECT_EQ(names::TopicProblem("t"), "2-64 ASCII letters, digits and '_', starting with a letter");
}

TEST(Names, Groups) {
  EXPECT_EQ(names::GroupProblem("group-1_a"), "");
  EXPECT_EQ(names::GroupProblem(std::string(1024, 'g')), "");
  for (const char* bad : {"", "g", "-g", "g#1", "g@1", "g,1", "g:1"}) {
    EXPECT_NE(names::GroupProblem(bad), "") << bad;
  }
  EXPECT_NE(names::GroupProblem(std::string(1025, 'g')), "");
}

TEST(Names, FilterItemsCountCharactersNotBytes) {
  EXPECT_EQ(names::FilterItemProblem("msg.type-1"), "");
  std::string two_byte;
  for (int i = 0; i < 256; ++i) two_byte += "\xc3\xbc";  // 256 characters, 512 bytes
  EXPECT_EQ(names::FilterItemProblem(two_byte), "");
  EXPECT_NE(names::FilterItemProblem(two_byte + "a"), "");
  for (const char* bad : {"", "a,b", "a#b", "a:b", "a=b", "a@b", "a b", "a\tb", "a\nb"}) {
    EXPECT_NE(names::FilterItemProblem(bad), "") << bad;
  }
}

TEST(Names, SessionKeys) {
  EXPECT_EQ(names::SessionKeyProblem(""), "");
  EXPECT_EQ(names::SessionKeyProblem("session-1.x"), "");
  for (const char* bad : {"a,b", "a#b", "a@b", "a:b", "a=b", "a b"}) {
    EXPECT_NE(names::SessionKeyProblem(bad), "") << bad;
  }
  EXPECT_NE(names::SessionKeyProblem(std::string(1025, 'k')), "");
}

TEST(Names, PartitionKeysHaveExactlyThreeFields) {
  std::string_view topic;
  ASSERT_TRUE(names::SplitPartitionKey("12:events:3", topic));
  EXPECT_EQ(topic, "events");
  for (const char* bad : {"", "12", "12:events", "12:a:b:3"}) {
    EXPECT_FALSE(names::SplitPartitionKey(bad, topic)) << bad;
  }
}

}  // namespace
}  // namespace tubemq
