// The TubeMQ frame (protocol.md §1.2): a 12-byte header (begin token, serial number,
// block count) followed by length-prefixed blocks whose concatenation is the payload.
// All integers are big-endian. There is no overall length, so a reader must walk the
// blocks; FrameReader does that incrementally over arbitrary TCP chunking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tubemq/status.h"

namespace tubemq::codec {

inline constexpr uint32_t kFrameBeginToken = 0xFF7FF4FEu;
inline constexpr size_t kFrameHeaderSize = 12;  // token + serial + block count
inline constexpr size_t kWriteBlockSize = 8192;  // RPC_MAX_BUFFER_SIZE
inline constexpr uint32_t kMaxBlockCount = 3584;  // MAX_FRAME_MAX_LIST_SIZE
// The largest payload a Java peer can write: 3584 blocks of 8192 bytes.
inline constexpr size_t kMaxPayloadSize = size_t{kMaxBlockCount} * kWriteBlockSize;

// Frames `payload` the way the Java writer does: blocks of 8192 bytes, the last one
// holding the remainder, so there is never an empty block and never zero blocks.
// Envelope payloads are never empty; an empty one would become a single empty block.
std::string EncodeFrame(int32_t serial, std::string_view payload);

// Overwrites the serial number of an already encoded frame. Requests are encoded on
// the caller's thread before the connection assigns their serial number.
void PatchFrameSerial(std::string& frame, int32_t serial);

struct Frame {
  int32_t serial = 0;
  std::string payload;
};

struct FrameLimits {
  uint32_t max_block_count = kMaxBlockCount;
  size_t max_payload_size = kMaxPayloadSize;
};

// Reassembles frames from a byte stream. After a protocol error the reader stays
// failed: the connection must be closed, because the stream can no longer be trusted.
class FrameReader {
 public:
  explicit FrameReader(FrameLimits limits = {}) : limits_(limits) {}

  // Consumes `size` bytes; appends every frame completed by them to `out`. Returns a
  // kProtocolError status (and consumes nothing more, ever) on a bad begin token, an
  // absurd block count, or a payload over the limit.
  Status Feed(const uint8_t* data, size_t size, std::vector<Frame>& out);

  // True while part of a frame has been read but not all of it.
  bool InsideFrame() const { return state_ != State::kHeader || partial_size_ > 0; }

 private:
  enum class State { kHeader, kBlockLength, kBlockData, kFailed };

  // Copies up to `want` bytes into the small fixed buffer used for headers and
  // block lengths. Returns true once `want` bytes are there.
  bool Gather(const uint8_t*& data, size_t& size, size_t want);
  Status Fail(std::string message);

  FrameLimits limits_;
  State state_ = State::kHeader;
  uint8_t partial_[kFrameHeaderSize] = {};
  size_t partial_size_ = 0;
  Frame current_;
  uint32_t blocks_left_ = 0;
  size_t block_left_ = 0;
  Status failure_;
};

}  // namespace tubemq::codec
