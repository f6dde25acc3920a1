// UTF-8 checks for text that comes from the network. TubeMQ carries message attributes,
// msgType and server error texts as bytes: producers in other languages put GBK or
// arbitrary bytes there, so the core never assumes they are UTF-8. These helpers let a
// caller that needs valid UTF-8 (Arrow string columns, for instance) get it cheaply.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tubemq {

// Bytes of the longest prefix of `text` that is well-formed UTF-8 (Unicode 3.9, table
// 3-7: no overlong forms, no surrogates, nothing above U+10FFFF). text.size() when the
// whole text is.
size_t ValidUtf8Prefix(std::string_view text);

inline bool IsValidUtf8(std::string_view text) { return ValidUtf8Prefix(text) == text.size(); }

// Appends `text` to `out`, each ill-formed sequence replaced by U+FFFD: one replacement
// per maximal subpart (the practice Unicode recommends, and the one of Python's
// bytes.decode("utf-8", "replace")), so the result is the text Python shows for the
// same bytes. Well-formed text is appended unchanged in one piece.
void AppendUtf8Replacing(std::string_view text, std::string& out);

}  // namespace tubemq
