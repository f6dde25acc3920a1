// CRC-32 of message data (protocol.md §5.11): the IEEE 802.3 polynomial of zlib and of
// java.util.zip.CRC32, so a value checked here is one the Java client would accept.
#pragma once

#include <cstdint>
#include <string_view>

namespace tubemq::codec {

// zlib's crc32() contract: `crc` is the value of the data before (0 to begin with), the
// result that of everything so far. Every message sent and every message fetched is
// checked once, so this is on both hot paths: on x86-64 with carry-less multiplication
// it folds 64 bytes per step (about ten times zlib's byte-table rate) and takes what is
// short of a fold eight bytes per step; elsewhere it is zlib's.
uint32_t Crc32(uint32_t crc, std::string_view data);

}  // namespace tubemq::codec
