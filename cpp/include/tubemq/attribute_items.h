// The items of a message's attribute string (protocol.md §5.11): "k1=v1,k2=v2,...", with
// the reserved items "$msgType$" and "$msgTime$" among them. One reading of it for
// everyone: the fetch path (which wants the reserved items), Properties(), and the
// Python binding, which builds `Message.attrs` straight from the views, allocating
// nothing on the way.
#pragma once

#include <cctype>
#include <string_view>

namespace tubemq {

inline constexpr std::string_view kMsgTypeKey = "$msgType$";
inline constexpr std::string_view kMsgTimeKey = "$msgTime$";

// Calls visit(key, value) for each "key=value" item, in order. Items without '=' and
// items whose key is blank are left out, as the Java client leaves them out; a value
// may hold further '=' characters.
template <typename Visit>
void VisitAttributeItems(std::string_view attribute, Visit&& visit) {
  if (attribute.empty()) return;
  size_t start = 0;
  for (;;) {
    const size_t end = attribute.find(',', start);
    const std::string_view item =
        attribute.substr(start, end == std::string_view::npos ? end : end - start);
    const size_t equals = item.find('=');
    if (equals != std::string_view::npos) {
      const std::string_view key = item.substr(0, equals);
      bool blank = true;
      for (const char c : key) blank = blank && std::isspace(static_cast<unsigned char>(c));
      if (!blank) visit(key, item.substr(equals + 1));
    }
    if (end == std::string_view::npos) return;
    start = end + 1;
  }
}

// The same, without the reserved items: the user's attributes.
template <typename Visit>
void VisitProperties(std::string_view attribute, Visit&& visit) {
  VisitAttributeItems(attribute, [&visit](std::string_view key, std::string_view value) {
    if (key != kMsgTypeKey && key != kMsgTimeKey) visit(key, value);
  });
}

}  // namespace tubemq
