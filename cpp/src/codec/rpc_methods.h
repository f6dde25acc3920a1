// Service types and method ids (protocol.md §3). Every request names both; the server
// rejects a method sent under the wrong service type, so the pairing lives here once.
#pragma once

#include <cstdint>

namespace tubemq::codec {

enum class ServiceType : int32_t {
  kMaster = 1,       // every call to a master
  kBrokerRead = 2,   // consumer -> broker
  kBrokerWrite = 3,  // producer -> broker (send message)
};

enum class Method : int32_t {
  kProducerRegister = 1,
  kProducerHeartbeat = 2,
  kProducerClose = 3,
  kConsumerRegister = 4,
  kConsumerHeartbeat = 5,
  kConsumerClose = 6,
  kSendMessage = 13,
  kBrokerConsumerRegister = 15,  // register and unregister, told apart by opType
  kBrokerConsumerHeartbeat = 16,
  kGetMessage = 17,
  kCommitOffset = 18,
  kConsumerRegisterV2 = 20,
  kConsumerHeartbeatV2 = 21,
  kGetPartitionMeta = 22,
};

constexpr ServiceType ServiceTypeOf(Method method) {
  switch (method) {
    case Method::kSendMessage:
      return ServiceType::kBrokerWrite;
    case Method::kBrokerConsumerRegister:
    case Method::kBrokerConsumerHeartbeat:
    case Method::kGetMessage:
    case Method::kCommitOffset:
      return ServiceType::kBrokerRead;
    default:
      return ServiceType::kMaster;
  }
}

// Constants of the envelope (protocol.md §2.2, §7.1).
inline constexpr int32_t kRpcFlagRequest = 0;
inline constexpr int32_t kRpcFlagResponse = 1;
inline constexpr int32_t kRpcProtocolVersion = 3;

}  // namespace tubemq::codec
