// AfterRetryPause: the wait between two rounds of a request that the master may answer
// better a moment later (registration; publish while a new master learns partitions).
// A client closed during the wait must not start another round: its pending timer would
// keep the I/O service busy and delay the close. So the round's caller says how to tell
// "still wanted", and a client closed meanwhile gets `done` with kClientShutdown instead.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "tubemq/status.h"

namespace tubemq::service {

using RoundDone = std::function<void(const Status&)>;

// Calls `next_round(done)` after `pause`, or `done(kClientShutdown: closed_text)` if
// `still_wanted()` is false by then. Both run on an I/O thread of `io`.
template <typename StillWanted, typename NextRound>
void AfterRetryPause(asio::io_context& io, std::chrono::milliseconds pause,
                     StillWanted still_wanted, std::string closed_text, RoundDone done,
                     NextRound next_round) {
  auto timer = std::make_shared<asio::steady_timer>(io, pause);
  timer->async_wait([timer, still_wanted = std::move(still_wanted),
                     closed_text = std::move(closed_text), done = std::move(done),
                     next_round = std::move(next_round)](const asio::error_code&) mutable {
    if (!still_wanted()) {
      done(Status(ErrorCode::kClientShutdown, closed_text));
      return;
    }
    next_round(std::move(done));
  });
}

}  // namespace tubemq::service
