// A GetMessage reply (GetMessageResponseB2C, protocol.md §5.12) decoded in place.
//
// protobuf's own parser copies every message's payload into a string of its own: one
// allocation and one copy per message, on the I/O thread, for bytes the application only
// reads. This decoder walks the same wire format over the reply's buffer instead and
// moves each kept body to the front of that buffer, right after the one before, so that
// a batch's values are one run of bytes (Batch.values() hands them out without a copy).
// The attribute strings, which the move would overwrite, go to a side buffer first.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tubemq/consumer.h"
#include "tubemq/status.h"

namespace tubemq::consumer {

// What the messages' views point into; a batch keeps it alive (ReceivedBatch::owner).
struct FetchBuffer {
  std::string bytes;       // the reply as received; the kept bodies at its front
  std::string attributes;  // the kept messages' attribute strings, one after another
};

struct FetchReply {
  bool success = false;
  int32_t err_code = 0;
  std::string err_msg;
  std::optional<int64_t> curr_offset;
  std::optional<int64_t> max_offset;
  std::optional<int64_t> curr_data_dlt;
  int32_t min_limit_time = 0;
  bool esc_flow_ctrl = false;
  bool require_slow = false;
  int64_t payload_bytes = 0;  // every message's data as sent, attribute headers included
  int32_t corrupt = 0;        // messages dropped: checksum or layout wrong
  std::vector<ReceivedMessage> messages;  // kept ones, in order; views into `owner`
  std::shared_ptr<const FetchBuffer> owner;
};

// Decodes `bytes`, taken over. Messages whose msgType is not in a non-empty `filters`
// are left out, as are corrupt ones (counted). kProtocolError when the bytes are not a
// GetMessageResponseB2C (a length past the end, a required field missing), as
// protobuf's parser would refuse them; unknown fields, and known ones of another wire
// type, are skipped as protobuf skips them.
Status DecodeFetchReply(std::string bytes, const std::set<std::string>& filters,
                        FetchReply& out);

}  // namespace tubemq::consumer
