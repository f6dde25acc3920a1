#include "tubemq/names.h"

#include <string>

namespace tubemq::names {
namespace {

bool AsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool AsciiWord(char c) { return AsciiLetter(c) || (c >= '0' && c <= '9') || c == '_'; }

// A letter, then at least one more character of `more`, `max` characters at most.
template <typename More>
bool LetterThen(std::string_view name, std::size_t max, More more) {
  if (name.size() < 2 || name.size() > max || !AsciiLetter(name[0])) return false;
  for (char c : name.substr(1)) {
    if (!more(c)) return false;
  }
  return true;
}

// Code points of UTF-8 text: bytes that do not continue a sequence.
std::size_t Characters(std::string_view text) {
  std::size_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

}  // namespace

std::string TopicProblem(std::string_view topic) {
  if (LetterThen(topic, kMaxTopic, AsciiWord)) return "";
  return "2-" + std::to_string(kMaxTopic) +
         " ASCII letters, digits and '_', starting with a letter";
}

std::string GroupProblem(std::string_view group) {
  if (LetterThen(group, kMaxGroup, [](char c) { return AsciiWord(c) || c == '-'; })) return "";
  return "2-" + std::to_string(kMaxGroup) +
         " ASCII letters, digits, '_' and '-', starting with a letter";
}

std::string FilterItemProblem(std::string_view item) {
  if (!item.empty() && Characters(item) <= kMaxFilterItem &&
      item.find_first_of(",#:=@ \t\r\n") == std::string_view::npos) {
    return "";
  }
  return "1-" + std::to_string(kMaxFilterItem) + " characters, none of ',#:=@' or blanks";
}

std::string SessionKeyProblem(std::string_view key) {
  if (Characters(key) <= kMaxSessionKey && key.find_first_of("#@,:= ") == std::string_view::npos) {
    return "";
  }
  return "at most " + std::to_string(kMaxSessionKey) + " characters, none of '#@,:=' or ' '";
}

bool SplitPartitionKey(std::string_view key, std::string_view& topic) {
  const auto first = key.find(':');
  const auto last = key.rfind(':');
  if (first == std::string_view::npos || first == last ||
      key.find(':', first + 1) != last) {
    return false;
  }
  topic = key.substr(first + 1, last - first - 1);
  return true;
}

}  // namespace tubemq::names
