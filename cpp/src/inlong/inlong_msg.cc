#include "tubemq/inlong_msg.h"

#include <utility>

#include "inlong/snappy_raw.h"

namespace tubemq::inlong {
namespace {

constexpr uint8_t kMagic = 0x0F;
constexpr uint16_t kInnerMagic = 0xEE01;
constexpr uint16_t kExtPrivateAttrs = 0x0001;
constexpr uint16_t kExtNamedIds = 0x0004;

bool Fail(DecodeError& error, ErrorKind kind, size_t offset, std::string message) {
  error.kind = kind;
  error.offset = offset;
  error.message = std::move(message);
  return false;
}

// Reads big-endian fields from one block; `base` is the block's offset in the pack, so
// errors name pack offsets.
class Reader {
 public:
  Reader(std::string_view data, size_t base) : data_(data), base_(base) {}

  size_t remaining() const { return data_.size() - pos_; }
  size_t offset() const { return base_ + pos_; }
  size_t position() const { return pos_; }

  bool Uint(size_t bytes, uint64_t& value, const char* field, DecodeError& error) {
    if (bytes > remaining()) {
      return Fail(error, ErrorKind::kTruncated, offset(),
                  std::string(field) + " (" + std::to_string(bytes) + " bytes) runs past the " +
                      "end of its block (" + std::to_string(remaining()) + " bytes left)");
    }
    value = 0;
    for (size_t i = 0; i < bytes; ++i) {
      value = (value << 8) | static_cast<uint8_t>(data_[pos_ + i]);
    }
    pos_ += bytes;
    return true;
  }

  // `length` bytes; a length beyond what is left is a length error, not a truncation:
  // the prefix that announced it is wrong (or the pack was cut).
  bool Bytes(uint64_t length, std::string_view& out, const char* field, DecodeError& error) {
    if (length > remaining()) {
      return Fail(error, ErrorKind::kLengthOutOfRange, offset(),
                  std::string(field) + " length " + std::to_string(length) +
                      " exceeds the " + std::to_string(remaining()) + " bytes left in its block");
    }
    out = data_.substr(pos_, static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return true;
  }

 private:
  std::string_view data_;
  size_t base_;
  size_t pos_ = 0;
};

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// UTF-8 or Java's modified UTF-8 (NUL as C0 80, supplementary characters as surrogate
// pairs) into UTF-8; false with the index of the first bad byte.
bool ToUtf8(std::string_view in, std::string& out, size_t& bad) {
  out.clear();
  out.reserve(in.size());
  const size_t n = in.size();
  size_t i = 0;
  auto byte = [&in](size_t at) { return static_cast<uint8_t>(in[at]); };
  while (i < n) {
    const uint8_t c = byte(i);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (c == 0xC0 && i + 1 < n && byte(i + 1) == 0x80) {
      out.push_back('\0');
      i += 2;
      continue;
    }
    size_t length;
    uint32_t cp;
    uint32_t minimum;
    if ((c & 0xE0) == 0xC0) {
      length = 2, cp = c & 0x1F, minimum = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, cp = c & 0x0F, minimum = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, cp = c & 0x07, minimum = 0x10000;
    } else {
      bad = i;
      return false;
    }
    if (length > n - i) {
      bad = i;
      return false;
    }
    for (size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) {
        bad = i;
        return false;
      }
      cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (cp < minimum || cp > 0x10FFFF) {
      bad = i;
      return false;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      // Only a high surrogate followed by a low one, both 3-byte forms, is a character.
      if (cp >= 0xDC00 || 6 > n - i || byte(i + 3) != 0xED || (byte(i + 4) & 0xF0) != 0xB0 ||
          (byte(i + 5) & 0xC0) != 0x80) {
        bad = i;
        return false;
      }
      const uint32_t low = 0xD000u | ((byte(i + 4) & 0x3Fu) << 6) | (byte(i + 5) & 0x3Fu);
      AppendUtf8(out, 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00));
      i += 6;
      continue;
    }
    out.append(in.substr(i, length));
    i += length;
  }
  return true;
}

// Text from the pack, as UTF-8; an attribute-encoding error at `offset` + the bad byte.
bool Text(std::string_view in, size_t offset, const char* field, std::string& out,
          DecodeError& error) {
  size_t bad = 0;
  if (ToUtf8(in, out, bad)) return true;
  return Fail(error, ErrorKind::kAttributeEncoding, offset + bad,
              std::string(field) + " is not UTF-8 (byte " + std::to_string(bad) + ")");
}

bool Parse(std::string_view text, size_t offset, Attributes& out, DecodeError& error) {
  if (ParseAttributes(text, out, error)) return true;
  error.offset += offset;
  return false;
}

// Where a group's (or v4 body's) data lives: the pack itself, or a decompressed block.
struct Block {
  std::string_view data;
  uint32_t index = 0;
  size_t base = 0;  // pack offset of the data (of the compressed data, when decompressed)
};

bool OpenBlock(Pack& pack, std::string_view stored, size_t offset, bool compressed,
               const DecodeOptions& options, Block& block, DecodeError& error) {
  if (!compressed) {
    block = Block{stored, 0, offset};
    return true;
  }
  std::string plain;
  std::string reason;
  if (!SnappyDecompress(stored, options.max_decompressed, plain, reason)) {
    return Fail(error, ErrorKind::kDecompression, offset, "snappy data: " + reason);
  }
  pack.blocks.push_back(std::move(plain));
  block = Block{pack.blocks.back(), static_cast<uint32_t>(pack.blocks.size()), offset};
  return true;
}

size_t PackOffset(const Block& block, const Reader& reader) {
  // Inside a decompressed block only the block's own place in the pack is meaningful.
  return block.index == 0 ? reader.offset() : block.base;
}

// An item list (u32 length, bytes)*, filling the block; each item one record.
bool ReadItems(Pack& pack, const Block& block, const std::string* raw_attr,
               const Attributes& attrs, DecodeError& error) {
  Reader reader(block.data, block.index == 0 ? block.base : 0);
  while (reader.remaining() > 0) {
    uint64_t length = 0;
    std::string_view body;
    if (!reader.Uint(4, length, "item length", error) ||
        !reader.Bytes(length, body, "item", error)) {
      error.offset = block.index == 0 ? error.offset : block.base;
      if (error.kind == ErrorKind::kTruncated) error.kind = ErrorKind::kMalformed;
      return false;
    }
    Record record;
    record.block = block.index;
    record.offset = static_cast<size_t>(body.data() - block.data.data()) +
                    (block.index == 0 ? block.base : 0);
    record.length = body.size();
    record.attrs = attrs;
    if (raw_attr) record.raw_attr = *raw_attr;
    pack.records.push_back(std::move(record));
  }
  return true;
}

// Pairs (u32 msgLen >= 1, msg, u32 attrLen >= 1, attr)* filling `reader`'s block: v3
// entries (the group's attributes, at `group_attr_offset`, then the record's own, which
// win) and the v4 layout B body (`common` wins over the record's own).
bool ReadPairs(Pack& pack, const Block& block, std::string_view data, size_t data_offset,
               const std::string& group_attr, size_t group_attr_offset,
               const Attributes* common, DecodeError& error) {
  Reader reader(data, data_offset);
  while (reader.remaining() > 0) {
    const size_t at = PackOffset(block, reader);
    uint64_t msg_length = 0;
    uint64_t attr_length = 0;
    std::string_view body;
    std::string_view attr;
    // Each length is checked as soon as it is read: a 0 (which Java never writes) is
    // reported as such, not as whatever the bytes after it happen to mean.
    bool ok = reader.Uint(4, msg_length, "record length", error);
    if (ok && msg_length == 0) {
      return Fail(error, ErrorKind::kMalformed, at, "a record of length 0 in a record/attribute pair");
    }
    ok = ok && reader.Bytes(msg_length, body, "record", error) &&
         reader.Uint(4, attr_length, "record attribute length", error);
    if (ok && attr_length == 0) {
      return Fail(error, ErrorKind::kMalformed, at, "a record attribute string of length 0");
    }
    ok = ok && reader.Bytes(attr_length, attr, "record attributes", error);
    if (!ok) {
      if (error.kind == ErrorKind::kTruncated) error.kind = ErrorKind::kMalformed;
      error.offset = at;
      return false;
    }
    // An error in the record's attributes is reported where they start in the pack, plus
    // its place in them; inside a decompressed block, where the block starts (an offset
    // into the decompressed bytes would point past the pack: the fuzzer found one).
    const bool stored = block.index == 0;
    const size_t attr_at = stored ? at + 8 + body.size() : block.base;
    const auto in_block = [&] {
      if (!stored) error.offset = block.base;
      return false;
    };
    std::string text;
    if (!Text(attr, attr_at, "record attributes", text, error)) return in_block();
    Record record;
    record.block = block.index;
    record.offset = static_cast<size_t>(body.data() - block.data.data()) +
                    (block.index == 0 ? block.base : 0);
    record.length = body.size();
    if (common == nullptr) {  // v3: the group's string, '&', the private one
      if (!Parse(group_attr, group_attr_offset, record.attrs, error)) return false;
      if (!Parse(text, attr_at, record.attrs, error)) return in_block();
      record.raw_attr = group_attr + "&" + text;
    } else {  // v4 layout B: the common attributes win
      if (!Parse(text, attr_at, record.attrs, error)) return in_block();
      for (const auto& [key, value] : *common) record.attrs[key] = value;
    }
    pack.records.push_back(std::move(record));
  }
  return true;
}

bool DecodeGroups(std::string_view pack_bytes, const DecodeOptions& options, Pack& pack,
                  DecodeError& error) {
  Reader reader(pack_bytes.substr(2, pack_bytes.size() - 4), 2);
  uint64_t value = 0;
  if (pack.version >= 1) {
    if (!reader.Uint(8, value, "createTime", error)) return false;
    pack.create_time_ms = static_cast<int64_t>(value);
  }
  if (pack.version >= 2) {
    if (!reader.Uint(4, value, "msgCount", error)) return false;
    pack.msg_count = static_cast<uint32_t>(value);
  }
  uint64_t groups = 0;
  if (!reader.Uint(4, groups, "groupCount", error)) return false;
  const size_t smallest = pack.version == 2 ? 11 : 7;  // a group's fixed bytes
  if (groups > reader.remaining() / smallest) {
    return Fail(error, ErrorKind::kMalformed, reader.offset() - 4,
                "groupCount " + std::to_string(groups) + " cannot fit in the " +
                    std::to_string(reader.remaining()) + " bytes left");
  }
  for (uint64_t g = 0; g < groups; ++g) {
    uint64_t attr_length = 0;
    std::string_view attr;
    if (!reader.Uint(2, attr_length, "group attribute length", error)) return false;
    const size_t attr_offset = reader.offset();
    if (!reader.Bytes(attr_length, attr, "group attributes", error)) return false;
    if (pack.version == 2 && !reader.Uint(4, value, "group recordCount", error)) return false;
    uint64_t data_length = 0;
    const size_t length_offset = reader.offset();
    if (!reader.Uint(4, data_length, "group dataLen", error)) return false;
    if (data_length == 0) {
      return Fail(error, ErrorKind::kMalformed, length_offset,
                  "group dataLen is 0 (it counts the compression flag)");
    }
    std::string_view data;
    if (!reader.Bytes(data_length, data, "group data", error)) return false;
    const uint8_t flag = static_cast<uint8_t>(data[0]);
    if (flag > 1) {
      return Fail(error, ErrorKind::kMalformed, length_offset + 4,
                  "group compression flag " + std::to_string(flag) + " (0 or 1 expected)");
    }
    std::string group_attr;
    if (!Text(attr, attr_offset, "group attributes", group_attr, error)) return false;
    Block block;
    if (!OpenBlock(pack, data.substr(1), length_offset + 5, flag == 1, options, block, error)) {
      return false;
    }
    if (pack.version == 3) {
      Reader entries(block.data, block.index == 0 ? block.base : 0);
      while (entries.remaining() > 0) {
        const size_t at = PackOffset(block, entries);
        uint64_t entry_length = 0;
        std::string_view entry;
        if (!entries.Uint(4, entry_length, "entry length", error) ||
            !entries.Bytes(entry_length, entry, "entry", error)) {
          if (error.kind == ErrorKind::kTruncated) error.kind = ErrorKind::kMalformed;
          error.offset = at;
          return false;
        }
        const size_t entry_offset = block.index == 0 ? at + 4 : block.base;
        if (!ReadPairs(pack, block, entry, entry_offset, group_attr, attr_offset, nullptr,
                       error)) {
          return false;
        }
      }
    } else {
      Attributes attrs;
      if (!Parse(group_attr, attr_offset, attrs, error)) return false;
      if (!ReadItems(pack, block, &group_attr, attrs, error)) return false;
    }
  }
  if (reader.remaining() != 0) {
    return Fail(error, ErrorKind::kMalformed, reader.offset(),
                std::to_string(reader.remaining()) + " bytes left over after the last group");
  }
  return true;
}

bool DecodeV4(std::string_view pack_bytes, const DecodeOptions& options, Pack& pack,
              DecodeError& error) {
  Reader reader(pack_bytes.substr(2, pack_bytes.size() - 4), 2);
  uint64_t total = 0, type = 0, group = 0, stream = 0, ext = 0, time = 0, count = 0, id = 0;
  uint64_t body_length = 0;
  if (!reader.Uint(4, total, "totalLen", error)) return false;
  if (total != pack_bytes.size() - 8) {
    return Fail(error, ErrorKind::kMalformed, 2,
                "totalLen " + std::to_string(total) + " but the pack holds " +
                    std::to_string(pack_bytes.size() - 8));
  }
  if (!reader.Uint(1, type, "msgType", error) || !reader.Uint(2, group, "groupIdNum", error) ||
      !reader.Uint(2, stream, "streamIdNum", error) ||
      !reader.Uint(2, ext, "extField", error) || !reader.Uint(4, time, "dataTime", error) ||
      !reader.Uint(2, count, "msgCnt", error) || !reader.Uint(4, id, "uniqueId", error) ||
      !reader.Uint(4, body_length, "bodyLen", error)) {
    return false;
  }
  pack.msg_type = static_cast<uint8_t>(type);
  pack.group_id_num = static_cast<uint16_t>(group);
  pack.stream_id_num = static_cast<uint16_t>(stream);
  pack.ext_field = static_cast<uint16_t>(ext);
  pack.data_time_s = static_cast<uint32_t>(time);
  pack.msg_count = static_cast<uint32_t>(count);
  pack.unique_id = static_cast<uint32_t>(id);
  pack.create_time_ms = static_cast<int64_t>(time) * 1000;
  const size_t body_offset = reader.offset();
  std::string_view body;
  if (!reader.Bytes(body_length, body, "body", error)) return false;
  uint64_t attr_length = 0;
  std::string_view attr;
  if (!reader.Uint(2, attr_length, "attrLen", error)) return false;
  const size_t attr_offset = reader.offset();
  if (!reader.Bytes(attr_length, attr, "attributes", error)) return false;
  uint64_t magic = 0;
  if (!reader.Uint(2, magic, "inner magic", error)) return false;
  if (magic != kInnerMagic) {
    return Fail(error, ErrorKind::kMalformed, reader.offset() - 2, "inner magic is not EE 01");
  }
  if (reader.remaining() != 0) {
    return Fail(error, ErrorKind::kMalformed, reader.offset(), "bytes after the inner magic");
  }
  const unsigned encoding = pack.msg_type >> 5;
  if (encoding > 1) {
    return Fail(error, ErrorKind::kUnsupportedEncoding, 6,
                "msgType " + std::to_string(pack.msg_type) +
                    ": the body is encrypted or of an unknown compression (" +
                    std::to_string(encoding) + ")");
  }
  pack.compressed = encoding == 1;
  if (!Text(attr, attr_offset, "attributes", pack.common_attr_raw, error)) return false;
  Attributes common;
  if (!Parse(pack.common_attr_raw, attr_offset, common, error)) return false;
  common["dt"] = std::to_string(static_cast<uint64_t>(time) * 1000);
  if ((pack.ext_field & kExtNamedIds) == 0) {
    common["groupId"] = std::to_string(group);
    common["streamId"] = std::to_string(stream);
  }
  // inlong-common 1.5.0 (the InLong release on Maven Central) writes cnt=1 whatever the
  // header's msgCnt; the spec describes mainline, which writes msgCnt. We follow the
  // release that producers run; msgCnt stays available as the pack's msg_count.
  common["cnt"] = "1";
  Block block;
  if (!OpenBlock(pack, body, body_offset, pack.compressed, options, block, error)) return false;
  if (pack.ext_field & kExtPrivateAttrs) {
    return ReadPairs(pack, block, block.data, block.index == 0 ? block.base : 0, "", 0, &common,
                     error);
  }
  return ReadItems(pack, block, nullptr, common, error);
}

// -- encoding helpers -------------------------------------------------------------------
void PutUint(std::string& out, uint64_t value, size_t bytes) {
  for (size_t i = bytes; i-- > 0;) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

// UTF-8 into Java's modified UTF-8, as writeUTF writes (readUTF refuses 4-byte forms).
std::string ToModifiedUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    const uint8_t c = static_cast<uint8_t>(in[i]);
    if (c == 0) {
      out.append("\xC0\x80");
      ++i;
    } else if ((c & 0xF8) == 0xF0 && i + 4 <= in.size()) {  // valid UTF-8 in
      const uint32_t cp = ((c & 0x07u) << 18) | ((static_cast<uint8_t>(in[i + 1]) & 0x3Fu) << 12) |
                          ((static_cast<uint8_t>(in[i + 2]) & 0x3Fu) << 6) |
                          (static_cast<uint8_t>(in[i + 3]) & 0x3Fu);
      const uint32_t v = cp - 0x10000;
      AppendUtf8(out, 0xD800 + (v >> 10));  // 3-byte forms of the two surrogates
      AppendUtf8(out, 0xDC00 + (v & 0x3FF));
      i += 4;
    } else {
      out.push_back(static_cast<char>(c));
      ++i;
    }
  }
  return out;
}

bool PutBlockData(std::string& out, const std::string& data, bool compress) {
  const std::string stored = compress ? SnappyCompressLiteral(data) : data;
  if (stored.size() + 1 > 0xFFFFFFFFull) return false;
  PutUint(out, stored.size() + 1, 4);
  out.push_back(compress ? 1 : 0);
  out.append(stored);
  return true;
}

}  // namespace

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotInLongMsg: return "not_inlongmsg";
    case ErrorKind::kUnsupportedVersion: return "unsupported_version";
    case ErrorKind::kTruncated: return "truncated";
    case ErrorKind::kLengthOutOfRange: return "length_out_of_range";
    case ErrorKind::kMalformed: return "malformed";
    case ErrorKind::kUnsupportedEncoding: return "unsupported_encoding";
    case ErrorKind::kDecompression: return "decompression";
    case ErrorKind::kAttributeFormat: return "attribute_format";
    case ErrorKind::kAttributeEncoding: return "attribute_encoding";
  }
  return "malformed";
}

bool IsInLongMsg(std::string_view pack) {
  const size_t n = pack.size();
  return n >= 4 && static_cast<uint8_t>(pack[0]) == kMagic &&
         static_cast<uint8_t>(pack[n - 2]) == kMagic && pack[1] == pack[n - 1];
}

bool ParseAttributes(std::string_view text, Attributes& out, DecodeError& error) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('&', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    if (!item.empty()) {
      const size_t equals = item.find('=');
      if (equals == std::string_view::npos || equals == 0) {
        return Fail(error, ErrorKind::kAttributeFormat, start,
                    "attribute item '" + std::string(item.substr(0, 60)) +
                        (equals == 0 ? "' has an empty key" : "' has no '='"));
      }
      out[std::string(item.substr(0, equals))] = std::string(item.substr(equals + 1));
    }
    start = end + 1;
  }
  return true;
}

bool Decode(std::string_view pack_bytes, const DecodeOptions& options, Pack& out,
            DecodeError& error) {
  out = Pack{};
  if (!IsInLongMsg(pack_bytes)) {
    return Fail(error, ErrorKind::kNotInLongMsg, 0,
                "not an InLongMsg pack (no 0F vv ... 0F vv frame)");
  }
  out.version = static_cast<uint8_t>(pack_bytes[1]);
  if (out.version > 4) {
    return Fail(error, ErrorKind::kUnsupportedVersion, 1,
                "InLongMsg version " + std::to_string(out.version) + " (0-4 are known)");
  }
  return out.version == 4 ? DecodeV4(pack_bytes, options, out, error)
                          : DecodeGroups(pack_bytes, options, out, error);
}

namespace {

// Names the record and the rule: InLong's own decoders read an empty body or an empty
// private attribute string in these layouts as a malformed pack.
std::string RecordNeedsBodyAndAttrs(const EncodeRecord& record,
                                    const std::vector<EncodeRecord>& records,
                                    const std::string& who) {
  const auto index = static_cast<size_t>(&record - records.data());
  return "record " + std::to_string(index) + " has " +
         (record.body.empty() ? "an empty body" : "no attributes of its own") + ": " + who +
         " needs a non-empty body and attributes (InLong's decoders refuse empty ones)";
}

}  // namespace

bool Encode(const std::vector<EncodeRecord>& records, const EncodeOptions& options,
            std::string& out, std::string& error) {
  const int version = options.version;
  if (version < 1 || version > 4) {
    error = "version must be 1, 2, 3 or 4";
    return false;
  }
  out.clear();
  out.push_back(static_cast<char>(kMagic));
  out.push_back(static_cast<char>(version));
  if (version == 4) {
    bool private_attrs = false;
    for (const auto& record : records) private_attrs = private_attrs || !record.attr.empty();
    std::string body;
    for (const auto& record : records) {
      if (private_attrs && (record.body.empty() || record.attr.empty())) {
        error = RecordNeedsBodyAndAttrs(record, records,
                                        "when any record of a v4 pack has attributes of "
                                        "its own, every record");
        return false;
      }
      PutUint(body, record.body.size(), 4);
      body.append(record.body);
      if (private_attrs) {
        PutUint(body, record.attr.size(), 4);
        body.append(record.attr);
      }
    }
    if (records.size() > 0xFFFF || options.pack_attr.size() > 0xFFFF) {
      error = "a v4 pack holds at most 65535 records and 65535 bytes of attributes";
      return false;
    }
    uint8_t type = 7;
    if (options.compress) {
      body = SnappyCompressLiteral(body);
      type |= 0x20;
    }
    const uint64_t total = 25 + body.size() + options.pack_attr.size();
    if (total > 0xFFFFFFFFull) {
      error = "the v4 body is too large";
      return false;
    }
    PutUint(out, total, 4);
    out.push_back(static_cast<char>(type));
    PutUint(out, options.group_id_num, 2);
    PutUint(out, options.stream_id_num, 2);
    PutUint(out, options.ext_field | (private_attrs ? kExtPrivateAttrs : 0), 2);
    PutUint(out, static_cast<uint64_t>(options.create_time_ms / 1000) & 0xFFFFFFFFu, 4);
    PutUint(out, records.size(), 2);
    PutUint(out, options.unique_id, 4);
    PutUint(out, body.size(), 4);
    out.append(body);
    PutUint(out, options.pack_attr.size(), 2);
    out.append(options.pack_attr);
    PutUint(out, kInnerMagic, 2);
  } else {
    // Groups: v1/v2 one per distinct attribute string in order of first use; v3 one.
    std::vector<std::pair<std::string, std::vector<const EncodeRecord*>>> groups;
    for (const auto& record : records) {
      const std::string& attr = version == 3 ? options.pack_attr : record.attr;
      auto found = groups.begin();
      while (found != groups.end() && found->first != attr) ++found;
      if (found == groups.end()) {
        groups.emplace_back(attr, std::vector<const EncodeRecord*>{});
        found = groups.end() - 1;
      }
      found->second.push_back(&record);
    }
    PutUint(out, static_cast<uint64_t>(options.create_time_ms), 8);
    if (version >= 2) PutUint(out, records.size(), 4);
    PutUint(out, groups.size(), 4);
    for (const auto& [attr, members] : groups) {
      const std::string java_attr = ToModifiedUtf8(attr);
      if (java_attr.size() > 0xFFFF) {
        error = "an attribute string is longer than 65535 bytes";
        return false;
      }
      PutUint(out, java_attr.size(), 2);
      out.append(java_attr);
      if (version == 2) PutUint(out, members.size(), 4);
      std::string data;
      if (version == 3) {
        std::string entry;
        for (const EncodeRecord* record : members) {
          if (record->body.empty() || record->attr.empty()) {
            error = RecordNeedsBodyAndAttrs(*record, records, "every record of a v3 pack");
            return false;
          }
          PutUint(entry, record->body.size(), 4);
          entry.append(record->body);
          PutUint(entry, record->attr.size(), 4);
          entry.append(record->attr);
        }
        PutUint(data, entry.size(), 4);
        data.append(entry);
      } else {
        for (const EncodeRecord* record : members) {
          PutUint(data, record->body.size(), 4);
          data.append(record->body);
        }
      }
      if (!PutBlockData(out, data, options.compress)) {
        error = "a group is larger than 4 GiB";
        return false;
      }
    }
  }
  out.push_back(static_cast<char>(kMagic));
  out.push_back(static_cast<char>(version));
  return true;
}

}  // namespace tubemq::inlong
