#include "codec/frame_codec.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "codec/big_endian.h"

namespace tubemq::codec {
namespace {

// The most a frame's first block makes the reader reserve for the rest (FrameReader).
constexpr size_t kReserveCap = size_t{4} << 20;

}  // namespace

std::string EncodeFrame(int32_t serial, std::string_view payload) {
  const size_t blocks = std::max<size_t>(1, (payload.size() + kWriteBlockSize - 1) / kWriteBlockSize);
  std::string frame;
  frame.resize(kFrameHeaderSize + blocks * 4 + payload.size());
  char* out = frame.data();
  out = PutUint32(out, kFrameBeginToken);
  out = PutUint32(out, static_cast<uint32_t>(serial));
  out = PutUint32(out, static_cast<uint32_t>(blocks));
  size_t offset = 0;
  for (size_t i = 0; i < blocks; ++i) {
    const size_t length = std::min(kWriteBlockSize, payload.size() - offset);
    out = PutUint32(out, static_cast<uint32_t>(length));
    std::memcpy(out, payload.data() + offset, length);
    out += length;
    offset += length;
  }
  return frame;
}

void PatchFrameSerial(std::string& frame, int32_t serial) {
  PutUint32(frame.data() + 4, static_cast<uint32_t>(serial));
}

bool FrameReader::Gather(const uint8_t*& data, size_t& size, size_t want) {
  const size_t take = std::min(size, want - partial_size_);
  std::memcpy(partial_ + partial_size_, data, take);
  partial_size_ += take;
  data += take;
  size -= take;
  return partial_size_ == want;
}

Status FrameReader::Fail(std::string message) {
  state_ = State::kFailed;
  failure_ = Status(ErrorCode::kProtocolError, std::move(message));
  current_ = Frame{};
  return failure_;
}

Status FrameReader::Feed(const uint8_t* data, size_t size, std::vector<Frame>& out) {
  if (state_ == State::kFailed) return failure_;
  while (size > 0) {
    switch (state_) {
      case State::kHeader: {
        if (!Gather(data, size, kFrameHeaderSize)) return Status::OK();
        partial_size_ = 0;
        const uint32_t token = GetUint32(partial_);
        if (token != kFrameBeginToken) {
          char hex[16];
          std::snprintf(hex, sizeof hex, "%08X", token);
          return Fail(std::string("bad frame begin token 0x") + hex + " (expected 0xFF7FF4FE)");
        }
        current_.serial = static_cast<int32_t>(GetUint32(partial_ + 4));
        blocks_left_ = GetUint32(partial_ + 8);
        if (blocks_left_ > limits_.max_block_count) {
          return Fail("frame block count " + std::to_string(blocks_left_) + " exceeds the limit " +
                      std::to_string(limits_.max_block_count));
        }
        current_.payload.clear();
        if (blocks_left_ == 0) {
          out.push_back(std::move(current_));
          current_ = Frame{};
        } else {
          state_ = State::kBlockLength;
        }
        break;
      }
      case State::kBlockLength: {
        if (!Gather(data, size, 4)) return Status::OK();
        partial_size_ = 0;
        const int32_t length = static_cast<int32_t>(GetUint32(partial_));
        if (length < 0) return Fail("negative frame block length " + std::to_string(length));
        if (current_.payload.size() + static_cast<size_t>(length) > limits_.max_payload_size) {
          return Fail("frame payload exceeds the limit of " +
                      std::to_string(limits_.max_payload_size) + " bytes");
        }
        block_left_ = static_cast<size_t>(length);
        if (current_.payload.empty()) {
          // Peers cut a frame into blocks of one size, so the first block's length times
          // the count is the frame's size: reserved once, the payload is not moved as
          // it grows (a fetch reply is half a megabyte). Capped, so that a peer that
          // announces much and sends little cannot make us hold much.
          const size_t expected = static_cast<size_t>(length) * blocks_left_;
          current_.payload.reserve(std::min({expected, kReserveCap, limits_.max_payload_size}));
        }
        state_ = State::kBlockData;
        [[fallthrough]];
      }
      case State::kBlockData: {
        // Appending as bytes arrive; beyond the capped reservation above, memory stays
        // proportional to what the peer actually sent.
        const size_t take = std::min(size, block_left_);
        current_.payload.append(reinterpret_cast<const char*>(data), take);
        data += take;
        size -= take;
        block_left_ -= take;
        if (block_left_ > 0) return Status::OK();
        if (--blocks_left_ == 0) {
          out.push_back(std::move(current_));
          current_ = Frame{};
          state_ = State::kHeader;
        } else {
          state_ = State::kBlockLength;
        }
        break;
      }
      case State::kFailed:
        return failure_;
    }
  }
  return Status::OK();
}

}  // namespace tubemq::codec
