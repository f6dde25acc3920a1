// InLongMsg ("TDMsg") packs, versions 0-4: the envelope InLong's DataProxy stores as one
// TubeMQ message payload, holding many records with attributes (spec: inlongmsg.md).
//
// The decoder is bounds-checked throughout: every length is compared with the bytes left
// in its enclosing block before it is used, no buffer is sized from a counter, and every
// malformed pack ends in one typed error naming the field and its offset. Bodies are not
// copied: a record names the block that holds it (the pack itself, or a decompressed
// group) and its offset and length there.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tubemq::inlong {

enum class ErrorKind {
  kNotInLongMsg,         // no 0F vv ... 0F vv frame
  kUnsupportedVersion,   // version byte above 4
  kTruncated,            // a fixed field runs past the pack
  kLengthOutOfRange,     // a length prefix exceeds the bytes of its block
  kMalformed,            // leftovers, bad flag, counts that cannot fit, bad inner magic
  kUnsupportedEncoding,  // v4 body encrypted or of an unknown compression
  kDecompression,        // bad Snappy data
  kAttributeFormat,      // an attribute item without '=' or with an empty key
  kAttributeEncoding,    // attribute bytes that are not (modified) UTF-8
};

const char* ErrorKindName(ErrorKind kind);

struct DecodeError {
  ErrorKind kind = ErrorKind::kMalformed;
  size_t offset = 0;  // in the pack (or, inside a decompressed block, the block's offset)
  std::string message;
};

using Attributes = std::map<std::string, std::string>;

struct Record {
  uint32_t block = 0;  // 0: the pack itself; k: Pack::blocks[k - 1]
  size_t offset = 0;
  size_t length = 0;
  Attributes attrs;                     // merged as InLong merges them (docs/inlong.md)
  std::optional<std::string> raw_attr;  // v0-v3: the attribute string of the record
};

struct Pack {
  int version = 0;
  std::optional<int64_t> create_time_ms;  // none for v0
  std::optional<uint32_t> msg_count;      // v2/v3 msgCount, v4 msgCnt
  std::vector<std::string> blocks;        // decompressed data, referenced by records
  std::vector<Record> records;            // in pack order
  // v4 only
  uint8_t msg_type = 0;
  uint16_t ext_field = 0;
  uint16_t group_id_num = 0;
  uint16_t stream_id_num = 0;
  uint32_t unique_id = 0;
  uint32_t data_time_s = 0;
  std::string common_attr_raw;
  bool compressed = false;
};

struct DecodeOptions {
  size_t max_decompressed = 64u << 20;  // per block; the spec's suggested cap
};

// The cheap frame check alone: 0F at both ends, the same version byte after the first and last.
bool IsInLongMsg(std::string_view pack);

// Decodes `pack`; false with `error` set when it is not a valid pack.
bool Decode(std::string_view pack, const DecodeOptions& options, Pack& out, DecodeError& error);

// Parses "k=v&k2=v2" into `out` (later keys win; empty items skipped). Converts modified
// UTF-8 to UTF-8. False with `error` set (offset relative to `text`) when it cannot.
bool ParseAttributes(std::string_view text, Attributes& out, DecodeError& error);

// -- encoding ---------------------------------------------------------------------------
struct EncodeRecord {
  std::string_view body;
  std::string attr;          // v1/v2: the record's attribute string; v3/v4: its private one
};

struct EncodeOptions {
  int version = 1;
  bool compress = false;     // Snappy, as Java's compress flag
  int64_t create_time_ms = 0;
  std::string pack_attr;     // v3: the group's attribute string; v4: the common attributes
  // v4 header
  uint16_t group_id_num = 0;
  uint16_t stream_id_num = 0;
  uint16_t ext_field = 0x0004;  // names in the attributes; 0x0001 is set for private attrs
  uint32_t unique_id = 0;
};

// Builds a pack as Java's InLongMsg does: v1/v2 one group per distinct attribute string in
// order of first use; v3 one group with one entry; v4 layout A, or B when any record has a
// private attribute string. False with `error` set when a field cannot hold its value.
bool Encode(const std::vector<EncodeRecord>& records, const EncodeOptions& options,
            std::string& out, std::string& error);

}  // namespace tubemq::inlong
