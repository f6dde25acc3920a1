#include "flowctrl/flow_ctrl_rule_handler.h"

#include <limits>

#include "log/log.h"

namespace tubemq::flowctrl {

FlowCtrlRuleHandler::FlowCtrlRuleHandler()
    : group_(std::make_shared<FlowCtrlRules>()), default_(std::make_shared<FlowCtrlRules>()) {}

bool FlowCtrlRuleHandler::Update(int64_t id, std::string_view json, const char* scope,
                                 int64_t& stored_id,
                                 std::shared_ptr<const FlowCtrlRules>& stored) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (id == stored_id) return false;
  }
  auto parsed = std::make_shared<FlowCtrlRules>();
  // Disabled on the server: the id comes back as -2 and the rules go.
  const Status status =
      id == kNoRulesId ? Status::OK() : FlowCtrlRules::Parse(json, *parsed);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!status.ok()) {
    const std::string error = std::string(scope) + " rules " + std::to_string(id) +
                              " ignored: " + status.message();
    if (error != last_error_) {
      TUBEMQ_LOG_WARN(error);
      last_error_ = error;
    }
    return false;
  }
  stored = std::move(parsed);
  stored_id = id;
  return true;
}

bool FlowCtrlRuleHandler::UpdateGroup(int64_t id, std::string_view json,
                                      int32_t qry_priority_id) {
  const bool changed = Update(id, json, "group flow-control", group_id_, group_);
  if (changed && qry_priority_id != kNoRulesId) {
    std::lock_guard<std::mutex> lock(mutex_);
    qry_priority_id_ = qry_priority_id;
  }
  return changed;
}

bool FlowCtrlRuleHandler::UpdateDefault(int64_t id, std::string_view json) {
  return Update(id, json, "default flow-control", default_id_, default_);
}

int64_t FlowCtrlRuleHandler::group_id() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return group_id_;
}

int64_t FlowCtrlRuleHandler::default_id() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return default_id_;
}

int32_t FlowCtrlRuleHandler::qry_priority_id() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return qry_priority_id_;
}

RuleSnapshot FlowCtrlRuleHandler::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return RuleSnapshot{group_, default_};
}

bool FlowCtrlRuleHandler::GroupUnderFlowControl(int64_t epoch_ms) const {
  const RuleSnapshot rules = Snapshot();
  return rules.group->DataLimitFor(std::numeric_limits<int64_t>::max(),
                                   Gmt8TimeOfDay(epoch_ms))
      .has_value();
}

}  // namespace tubemq::flowctrl
