// Status: how every operation of the core reports its outcome.
//
// The core never throws across an I/O thread. Each operation ends in a Status that
// carries a code and a human-readable message. Codes below 1000 are TubeMQ's own
// (protocol.md §7.5, the values the server puts in `errCode`); codes from 1000 up are
// the client's, for faults that never reach a server (transport, local checks).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace tubemq {

enum class ErrorCode : int32_t {
  // --- TubeMQ server codes (protocol.md §7.5) -------------------------------------
  kSuccess = 200,
  kNotReady = 201,
  kMoved = 301,
  kBadRequest = 400,
  kUnauthorized = 401,
  kConnectReturnNull = 402,
  kForbidden = 403,
  kNotFound = 404,
  kAllPartitionFrozen = 405,
  kNoPartitionAssigned = 406,
  kAllPartitionWaiting = 407,
  kAllPartitionInUse = 408,
  kPartitionOccupied = 410,
  kHeartbeatNoNode = 411,
  kDuplicatePartition = 412,
  kCertificateFailure = 415,
  kServerReceiveOverflow = 419,
  kClientShutdown = 420,
  kClientHighFrequencyRequest = 421,
  kPartitionUnsubscribable = 422,
  kPartitionUnpublishable = 423,
  kInconsistentConsumeType = 424,
  kInconsistentTopicSet = 425,
  kInconsistentFilterSet = 426,
  kInconsistentSessionKey = 427,
  kInconsistentSelectBig = 428,
  kInconsistentSourceCount = 429,
  kDuplicateNodeId = 430,
  kTopicNotDeployed = 431,
  kMessageNull = 440,
  kTopicBlank = 441,
  kBodyEmpty = 442,
  kTopicUnpublished = 443,
  kTopicNoPartition = 444,
  kMessageTooLarge = 445,
  kConsumeGroupForbidden = 450,
  kServerConsumeSpeedLimit = 452,
  kConsumeContentForbidden = 455,
  kInternalServerError = 500,
  kServiceUnavailable = 503,
  kInternalServerErrorMsgSetNull = 510,
  kUnspecifiedAbnormal = 599,

  // --- client codes: faults that never reach a server ----------------------------
  // Where the upstream C++ client has a code for the same condition, it is reused
  // (behaviour.md §8.4): 1000, 1001, 2002, 5001.
  kRequestTimeout = 1000,     // no reply within the request's deadline
  kConnectFailed = 1001,      // TCP connect refused, unreachable or timed out
  kConnectionClosed = 1002,   // the peer closed or reset the connection
  // A send timed out after its request was handed to the network: the broker may have
  // stored the message, so unlike 1000 it is not retriable (a blind retry may store it
  // twice). Not a C client code; 1003 is free in both the upstream C and Java clients.
  kSendOutcomeUnknown = 1003,
  kRemoteException = 1004,    // the server answered with an exception response
  kInvalidArgument = 1010,    // bad input from the application (maps to ConfigError)
  kQueueFull = 1011,          // the in-flight window is full and blocking was not wanted
  kForkedClient = 1012,       // a client created before fork() used in the child
  kServiceStopped = 2002,     // the I/O service stopped under a pending request
  kConfirmContextInvalid = 2004,  // a confirm for a batch that is no longer outstanding
  kProtocolError = 5001,      // bytes that break the frame or envelope rules
};

class Status {
 public:
  Status() = default;  // success
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kSuccess; }
  ErrorCode code() const { return code_; }
  int32_t code_value() const { return static_cast<int32_t>(code_); }
  const std::string& message() const { return message_; }

  // "<message> (code N)", for logs.
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kSuccess;
  std::string message_;
};

// The symbolic name of a code, e.g. "HB_NO_NODE" for 411; "UNKNOWN" for others.
const char* ErrorCodeName(int32_t code);

// Whether retrying the same operation later may succeed (used for `.retriable`).
bool IsRetriable(int32_t code);

}  // namespace tubemq
