// The rules for names a client sends: topics, groups, msgType filter items and bound
// consume session keys (behaviour.md §0.1).
//
// They live here and nowhere else. The C++ Consumer checks its options with them, and
// the Python facade asks them through tubemq._core (its _config.py keeps no rule of its
// own), so a name is refused the same way, in the same words, from either language.
// Why in C++ and not in Python: C++ users get no Python, while every Python user has the
// extension.
//
// The master's RPC path checks little, and a separator inside a name corrupts the
// strings the protocol builds from names ("topic#item,item", "brokerId:topic:partition"),
// so a client refuses such names before anything is sent.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tubemq::names {

inline constexpr std::size_t kMaxTopic = 64;
inline constexpr std::size_t kMaxGroup = 1024;
inline constexpr std::size_t kMaxFilterItem = 256;  // in characters (code points)
inline constexpr std::size_t kMaxFilterItems = 500;  // distinct items per topic
inline constexpr std::size_t kMaxSessionKey = 1024;

// Each returns "" when the name follows its rule, else the rule in words, for a message
// such as "invalid topic name 'x': <rule>".
std::string TopicProblem(std::string_view topic);
std::string GroupProblem(std::string_view group);
std::string FilterItemProblem(std::string_view item);
std::string SessionKeyProblem(std::string_view key);  // "" (no session) is fine

// A partition key is "brokerId:topic:partitionId": exactly three fields. Sets `topic`
// and returns true for one, returns false for anything else.
bool SplitPartitionKey(std::string_view key, std::string_view& topic);
inline constexpr const char* kPartitionKeyForm = "brokerId:topic:partitionId";

}  // namespace tubemq::names
