#include "tubemq/status.h"

namespace tubemq {

std::string Status::ToString() const {
  if (ok()) return "OK";
  return message_ + " (code " + std::to_string(code_value()) + " " + ErrorCodeName(code_value()) +
         ")";
}

const char* ErrorCodeName(int32_t code) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::kSuccess: return "SUCCESS";
    case ErrorCode::kNotReady: return "NOT_READY";
    case ErrorCode::kMoved: return "MOVED";
    case ErrorCode::kBadRequest: return "BAD_REQUEST";
    case ErrorCode::kUnauthorized: return "UNAUTHORIZED";
    case ErrorCode::kConnectReturnNull: return "CONNECT_RETURN_NULL";
    case ErrorCode::kForbidden: return "FORBIDDEN";
    case ErrorCode::kNotFound: return "NOT_FOUND";
    case ErrorCode::kAllPartitionFrozen: return "ALL_PARTITION_FROZEN";
    case ErrorCode::kNoPartitionAssigned: return "NO_PARTITION_ASSIGNED";
    case ErrorCode::kAllPartitionWaiting: return "ALL_PARTITION_WAITING";
    case ErrorCode::kAllPartitionInUse: return "ALL_PARTITION_INUSE";
    case ErrorCode::kPartitionOccupied: return "PARTITION_OCCUPIED";
    case ErrorCode::kHeartbeatNoNode: return "HB_NO_NODE";
    case ErrorCode::kDuplicatePartition: return "DUPLICATE_PARTITION";
    case ErrorCode::kCertificateFailure: return "CERTIFICATE_FAILURE";
    case ErrorCode::kServerReceiveOverflow: return "SERVER_RECEIVE_OVERFLOW";
    case ErrorCode::kClientShutdown: return "CLIENT_SHUTDOWN";
    case ErrorCode::kClientHighFrequencyRequest: return "CLIENT_HIGH_FREQUENCY_REQUEST";
    case ErrorCode::kPartitionUnsubscribable: return "PARTITION_UNSUBSCRIBABLE";
    case ErrorCode::kPartitionUnpublishable: return "PARTITION_UNPUBLISHABLE";
    case ErrorCode::kInconsistentConsumeType: return "CLIENT_INCONSISTENT_CONSUMETYPE";
    case ErrorCode::kInconsistentTopicSet: return "CLIENT_INCONSISTENT_TOPICSET";
    case ErrorCode::kInconsistentFilterSet: return "CLIENT_INCONSISTENT_FILTERSET";
    case ErrorCode::kInconsistentSessionKey: return "CLIENT_INCONSISTENT_SESSIONKEY";
    case ErrorCode::kInconsistentSelectBig: return "CLIENT_INCONSISTENT_SELECTBIG";
    case ErrorCode::kInconsistentSourceCount: return "CLIENT_INCONSISTENT_SOURCECOUNT";
    case ErrorCode::kDuplicateNodeId: return "CLIENT_DUPLICATE_INDEXID";
    case ErrorCode::kTopicNotDeployed: return "TOPIC_NOT_DEPLOYED";
    case ErrorCode::kMessageNull: return "PARAMETER_MSG_NULL";
    case ErrorCode::kTopicBlank: return "PARAMETER_MSG_TOPIC_BLANK";
    case ErrorCode::kBodyEmpty: return "PARAMETER_MSG_BODY_EMPTY";
    case ErrorCode::kTopicUnpublished: return "PARAMETER_MSG_TOPIC_UNPUBLISHED";
    case ErrorCode::kTopicNoPartition: return "PARAMETER_MSG_TOPIC_NO_PARTITION";
    case ErrorCode::kMessageTooLarge: return "PARAMETER_MSG_OVER_MAX_LENGTH";
    case ErrorCode::kConsumeGroupForbidden: return "CONSUME_GROUP_FORBIDDEN";
    case ErrorCode::kServerConsumeSpeedLimit: return "SERVER_CONSUME_SPEED_LIMIT";
    case ErrorCode::kConsumeContentForbidden: return "CONSUME_CONTENT_FORBIDDEN";
    case ErrorCode::kInternalServerError: return "INTERNAL_SERVER_ERROR";
    case ErrorCode::kServiceUnavailable: return "SERVICE_UNAVAILABLE";
    case ErrorCode::kInternalServerErrorMsgSetNull: return "INTERNAL_SERVER_ERROR_MSGSET_NULL";
    case ErrorCode::kUnspecifiedAbnormal: return "UNSPECIFIED_ABNORMAL";
    case ErrorCode::kRequestTimeout: return "REQUEST_TIMEOUT";
    case ErrorCode::kConnectFailed: return "CONNECT_FAILED";
    case ErrorCode::kConnectionClosed: return "CONNECTION_CLOSED";
    case ErrorCode::kSendOutcomeUnknown: return "SEND_OUTCOME_UNKNOWN";
    case ErrorCode::kProtocolError: return "PROTOCOL_ERROR";
    case ErrorCode::kRemoteException: return "REMOTE_EXCEPTION";
    case ErrorCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case ErrorCode::kQueueFull: return "QUEUE_FULL";
    case ErrorCode::kForkedClient: return "FORKED_CLIENT";
    case ErrorCode::kServiceStopped: return "SERVICE_STOPPED";
    case ErrorCode::kConfirmContextInvalid: return "CONFIRM_CONTEXT_INVALID";
  }
  return "UNKNOWN";
}

bool IsRetriable(int32_t code) {
  switch (static_cast<ErrorCode>(code)) {
    // Retrying later (or elsewhere) may succeed: behaviour.md §2.7 and §8.4.
    case ErrorCode::kNotReady:
    case ErrorCode::kMoved:
    case ErrorCode::kConnectReturnNull:
    case ErrorCode::kForbidden:  // on another partition, after the next metadata refresh
    case ErrorCode::kClientHighFrequencyRequest:
    case ErrorCode::kTopicNoPartition:  // partitions may be assigned again
    case ErrorCode::kNotFound:
    case ErrorCode::kAllPartitionFrozen:
    case ErrorCode::kNoPartitionAssigned:
    case ErrorCode::kAllPartitionWaiting:
    case ErrorCode::kAllPartitionInUse:
    case ErrorCode::kPartitionOccupied:
    case ErrorCode::kHeartbeatNoNode:
    case ErrorCode::kServerReceiveOverflow:
    case ErrorCode::kServerConsumeSpeedLimit:
    case ErrorCode::kInternalServerError:
    case ErrorCode::kServiceUnavailable:
    case ErrorCode::kInternalServerErrorMsgSetNull:
    case ErrorCode::kUnspecifiedAbnormal:
    case ErrorCode::kRequestTimeout:
    case ErrorCode::kConnectFailed:
    case ErrorCode::kConnectionClosed:
    case ErrorCode::kProtocolError:
    case ErrorCode::kQueueFull:
      return true;
    // Not retriable although transient: the broker may already hold the message.
    case ErrorCode::kSendOutcomeUnknown:
      return false;
    default:
      return false;
  }
}

}  // namespace tubemq
