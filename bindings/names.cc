// The name rules of tubemq/names.h, for the Python facade: tubemq._config asks these
// instead of keeping rules of its own, so Python and C++ refuse the same names in the
// same words. Names come as WireString so that text with lone surrogates reaches the
// rule as the bytes it stands for (and fails it) instead of failing the conversion.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <string_view>

#include "text.h"
#include "tubemq/names.h"

namespace py = pybind11;

namespace tubemq::bindings {

void RegisterNames(py::module_& module) {
  module.attr("MAX_TOPIC_NAME") = names::kMaxTopic;
  module.attr("MAX_GROUP_NAME") = names::kMaxGroup;
  module.attr("MAX_FILTER_ITEM") = names::kMaxFilterItem;
  module.attr("MAX_FILTER_ITEMS") = names::kMaxFilterItems;
  module.attr("MAX_SESSION_KEY") = names::kMaxSessionKey;
  module.attr("PARTITION_KEY_FORM") = names::kPartitionKeyForm;
  module.def(
      "topic_name_problem", [](const WireString& name) { return names::TopicProblem(name.bytes); },
      py::arg("name"), "'' for a valid topic name, else its rule in words.");
  module.def(
      "group_name_problem", [](const WireString& name) { return names::GroupProblem(name.bytes); },
      py::arg("name"), "'' for a valid group name, else its rule in words.");
  module.def(
      "filter_item_problem",
      [](const WireString& item) { return names::FilterItemProblem(item.bytes); },
      py::arg("item"), "'' for a valid msgType filter item, else its rule in words.");
  module.def(
      "session_key_problem",
      [](const WireString& key) { return names::SessionKeyProblem(key.bytes); }, py::arg("key"),
      "'' for a valid bound consume session key, else its rule in words.");
  module.def(
      "partition_key_topic",
      [](const WireString& key) -> std::optional<py::str> {
        std::string_view topic;
        if (!names::SplitPartitionKey(key.bytes, topic)) return std::nullopt;
        return WireText(topic);
      },
      py::arg("key"), "The topic of a partition key 'brokerId:topic:partitionId', else None.");
}

}  // namespace tubemq::bindings
