// Small string helpers for the separator-based formats of protocol.md §5. Splitting
// keeps empty items (unlike Java's String.split), so callers see exactly what came.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tubemq::meta {

std::vector<std::string_view> Split(std::string_view text, char separator);
std::string_view Trim(std::string_view text);
// Decimal integer with an optional leading '-'; false on anything else or overflow.
bool ParseInt(std::string_view text, int64_t& out);

}  // namespace tubemq::meta
