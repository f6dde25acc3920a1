// The receive low-water mark of a connection with many requests awaiting replies.
//
// A producer keeps thousands of sends in flight on one broker connection, and the broker
// writes each reply on its own. Were the reader woken for every reply, both sides would
// pay: the broker's write does the wake-up (16 % of the broker's connection thread in a
// profile, against 1.5 % for the Java client), and we would read one reply per wake-up.
// A receive low-water mark (SO_RCVLOWAT) has the kernel wake the reader only once a
// number of bytes has arrived. The mark is set so that a quarter of the waiting requests'
// replies always reach it, and lowered to one byte after kMaxWait: a reply never waits
// longer than that for others to join it.
#pragma once

#include <chrono>
#include <cstddef>

namespace tubemq::net::read_watermark {

// Below this many requests awaiting replies, the reader wakes for every byte.
constexpr size_t kDeepPipeline = 256;
// No reply frame is shorter: its header alone is token, serial, list size and the
// first item's length, four bytes each.
constexpr size_t kMinReplyFrameBytes = 16;
// At most this many replies are waited for, whatever the depth.
constexpr size_t kMaxRepliesWaitedFor = 128;
// How long a read waits for the mark before the mark is lowered to one byte.
constexpr std::chrono::microseconds kMaxWait{1000};

// The mark, in bytes, with `pending` requests awaiting replies: 1 below kDeepPipeline;
// above it, the bytes of the shortest reply frames of a quarter of them (at most
// kMaxRepliesWaitedFor).
size_t For(size_t pending);

// Whether marks may be used here: Linux 4.18 and later signal a waiting reader when its
// mark is lowered below the bytes already queued, which is what makes kMaxWait hold.
// Elsewhere the reader wakes for every byte, as without a mark.
bool Supported();

}  // namespace tubemq::net::read_watermark
