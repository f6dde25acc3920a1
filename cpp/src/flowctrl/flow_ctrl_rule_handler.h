// FlowCtrlRuleHandler: a consumer's current flow-control rules (behaviour.md §6.1): the
// cluster's default set and its group's set, each with the id the master versions it by,
// plus the group's qryPriorityId. Heartbeat replies update them; readers take immutable
// snapshots, so evaluation never holds the lock.
//
// Update semantics: any id different from the stored one is an update (so the master
// can also disable rules); an update whose JSON does not parse is rejected whole, the
// old rules and id stay, and the master resends it with the next heartbeat.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "flowctrl/flow_ctrl_rules.h"

namespace tubemq::flowctrl {

inline constexpr int64_t kNoRulesId = -2;

struct RuleSnapshot {
  std::shared_ptr<const FlowCtrlRules> group;
  std::shared_ptr<const FlowCtrlRules> cluster_default;
};

class FlowCtrlRuleHandler {
 public:
  FlowCtrlRuleHandler();

  // Both return true when the rules changed; a bad JSON logs its reason and returns false.
  bool UpdateGroup(int64_t id, std::string_view json, int32_t qry_priority_id);
  bool UpdateDefault(int64_t id, std::string_view json);

  int64_t group_id() const;
  int64_t default_id() const;
  int32_t qry_priority_id() const;
  RuleSnapshot Snapshot() const;

  // Whether the group's own rules limit this group now (the escFlowCtrl flag of a fetch:
  // the client paces itself, so the broker need not apply the default rules).
  bool GroupUnderFlowControl(int64_t epoch_ms) const;

 private:
  bool Update(int64_t id, std::string_view json, const char* scope, int64_t& stored_id,
              std::shared_ptr<const FlowCtrlRules>& stored);

  mutable std::mutex mutex_;
  int64_t group_id_ = kNoRulesId;
  int64_t default_id_ = kNoRulesId;
  int32_t qry_priority_id_ = kNoRulesId;
  std::shared_ptr<const FlowCtrlRules> group_;
  std::shared_ptr<const FlowCtrlRules> default_;
  std::string last_error_;  // logged once, not at every heartbeat
};

}  // namespace tubemq::flowctrl
