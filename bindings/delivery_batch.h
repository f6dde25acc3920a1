// A batch of send outcomes as the delivery thread drains it: kept native until Python
// needs a piece of it. Most outcomes are never looked at from Python (send_async() in a
// loop drops its handles; a pending send's handle then has only the tracker's
// reference), and making a tuple and a SendResult for each was a third of what the
// delivery thread cost per message (issue 25).
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "deliveries.h"

namespace tubemq::bindings {

struct DeliveryBatch {
  std::vector<Delivery> items;
};

// tubemq._core.DeliveryBatch, settle_deliveries() and forget_deliveries().
void RegisterDeliveryBatch(pybind11::module_& module);

}  // namespace tubemq::bindings
