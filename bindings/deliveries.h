// Outcomes of asynchronous sends, handed from I/O threads to Python. An I/O thread only
// pushes (a short lock, no Python); the facade's delivery thread drains with the GIL
// released and completes futures and callbacks itself (design.md §2).
//
// The queue is bounded from the sending side: an I/O thread must never block, so a push
// always succeeds, but a send takes a place first (TryAdmit) and gives it back only once
// Python has settled its outcome: at most `limit` sends are ever unsettled, in flight
// and undelivered together. So a slow callback paces the sender, one send per outcome
// settled. (Counting only the outcomes waiting let `limit` more sit in flight; once they
// landed the queue stood far above the limit, and a sender waited for a whole window's
// worth of callbacks, then sent a burst.)
//
// "Settled" is the batch the delivery thread took last, once Python has completed its
// futures (Settled(), under the tracker's lock, so that its in-flight count and this room
// change together) or comes for the next batch.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tubemq/message.h"
#include "tubemq/status.h"

namespace tubemq::bindings {

// Where sends were stored. Every send to one partition names the same topic, partition
// key ("<brokerId>:<topic>:<partitionId>") and broker, in strings mostly too long for
// std::string's inline buffer. Each outcome carried its own copies, made on the I/O
// thread and freed on the delivery thread; a free across threads takes the allocating
// arena's lock, and those frees were 14 % of the delivery thread's samples. Outcomes now
// share one SendPlace per partition and the I/O thread frees its own copies.
struct SendPlace {
  std::string topic;
  std::string partition_key;
  std::string broker_address;
};

struct Delivery {
  uint64_t token = 0;
  Status status;
  SendResult result;  // once pushed, its strings are empty: they are in `place`
  std::shared_ptr<const SendPlace> place = nullptr;  // null unless the send succeeded
  bool forgotten = false;  // settled and dropped from the tracker's table already

  // The result as the core reported it.
  SendResult TakeResult() {
    if (place) {
      result.topic = place->topic;
      result.partition_key = place->partition_key;
      result.broker_address = place->broker_address;
    }
    return std::move(result);
  }
};

class DeliveryQueue {
 public:
  // How long a drain waits for more outcomes once it has one (see Drain()). Each drain
  // costs the delivery thread some 80 us whatever its size (a GIL handoff, two sleeps,
  // the tracker's Python): with 2 ms, at 27 000 sends/s, that was half its 1.6 us a
  // send; with 5 ms, drains are twice as large and it takes about 1 us.
  static constexpr auto kLinger = std::chrono::milliseconds(5);

  explicit DeliveryQueue(size_t limit, std::chrono::milliseconds linger = kLinger)
      : limit_(limit), linger_(linger) {}

  void Push(Delivery delivery) {
    SendPlace copies;  // the result's own strings: freed on this thread, after the lock
    bool wake = false;
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      NoteArrival(now);
      if (delivery.status.ok()) {
        delivery.place = PlaceOf(delivery.result);
        copies.topic.swap(delivery.result.topic);
        copies.partition_key.swap(delivery.result.partition_key);
        copies.broker_address.swap(delivery.result.broker_address);
      }
      items_.push_back(std::move(delivery));
      // Only what the drainer waits for wakes it: the first outcome, the count its
      // linger waits for, or the last outcome still to come. A wake-up per push cost a
      // futex call per message.
      wake = items_.size() == 1 || items_.size() == lingering_for_ ||
             (lingering_for_ > 0 && NothingToLingerFor());
    }
    if (wake) ready_.notify_one();
  }

  // Takes a place for a send about to be handed to the core, if fewer than `limit` are
  // unsettled. The delivery thread always may (a callback that sends must not wait for
  // its own thread).
  bool TryAdmit() {
    if (drainer_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
      unsettled_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    size_t now = unsettled_.load(std::memory_order_relaxed);
    while (now < limit_) {
      if (unsettled_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  // Gives back the place of a send that never reached the core (it raised first).
  void Retract() {
    std::lock_guard<std::mutex> lock(mutex_);
    unsettled_.fetch_sub(1, std::memory_order_relaxed);
    room_.notify_all();
    if (lingering_for_ > 0) ready_.notify_one();  // it may have been the last one to come
  }

  bool HasRoom() const {
    return unsettled_.load(std::memory_order_relaxed) < limit_ ||
           drainer_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }

  // Waits up to `wait` for a place (or Wake()) and takes it; false without one. While
  // it waits, the sender counts as a thread waiting for every outcome (Flushing()): a
  // place frees only once outcomes are settled, and with a small max_in_flight a
  // lingering drain would hold the sender up for the whole linger per outcome.
  bool WaitAdmit(std::chrono::milliseconds wait) {
    if (TryAdmit()) return true;
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t woken = wake_generation_;
    ChangeFlushing(1);
    room_.wait_for(lock, wait, [&] { return HasRoom() || wake_generation_ != woken; });
    ChangeFlushing(-1);
    return TryAdmit();
  }

  // Waits up to `wait` for at least one delivery (or Wake()), then takes up to `max`.
  //
  // Once the first delivery is there, it lingers up to `linger` for more (unless `max`
  // are already waiting): every drain makes the delivery thread take the GIL, and a
  // sending thread that releases the GIL around each send then waits for it, so fewer,
  // larger drains are what keeps send_async() cheap. Futures complete at most `linger`
  // later for it, unless a thread waits for one (Waiting()): then nothing lingers. Nor
  // does it linger, while a thread waits for every outcome (Flushing(): flush(), close(),
  // a sender waiting for a place), once every admitted send's outcome is here: there is
  // no more to wait for. So produce() then flush() pays no linger, and flush() of a full
  // window still gets its outcomes in batches (counted as waiting, a flush of 20 000
  // sends took some 2 000 drains, a third of the delivery thread's CPU in a 5 s window
  // of send_async()). Without such a thread, outcomes that all arrived still linger
  // while they come often enough for the linger to gather more (kLingerGathers): at
  // 1 000 msg/s, where each send's answer is in before the next send, a drain at every
  // answer cost the delivery thread a GIL hand-over and a wake-up per message (the
  // Python threads' CPU beside a consumer fell from about 100 to 65 us per message
  // with the linger). At a slower trickle a linger would gather nothing and only delay
  // the callbacks, so there outcomes are handed out at once.
  std::vector<Delivery> Drain(std::chrono::milliseconds wait, size_t max) {
    drainer_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(mutex_);
    FreeInHand();  // the previous batch is done with, if Settled() did not say so
    const uint64_t woken = wake_generation_;
    ready_.wait_for(lock, wait, [&] { return !items_.empty() || wake_generation_ != woken; });
    const auto enough = [&] {
      return items_.size() >= max || wake_generation_ != woken || waiting_ > 0 ||
             NothingToLingerFor();
    };
    if (!items_.empty() && !enough()) {
      lingering_for_ = max;
      ready_.wait_for(lock, linger_, enough);
      lingering_for_ = 0;
    }
    // The whole queue changes hands when it fits (the usual case): moving outcomes one by
    // one, under the lock the I/O thread pushes with, and regrowing the batch were about
    // 9 % of the delivery thread's samples. The queue keeps room for a batch this large.
    std::vector<Delivery> out;
    if (items_.size() <= max) {
      out.swap(items_);
      items_.reserve(out.size());
    } else {
      const auto end = items_.begin() + static_cast<std::ptrdiff_t>(max);
      out.assign(std::make_move_iterator(items_.begin()), std::make_move_iterator(end));
      items_.erase(items_.begin(), end);
    }
    in_hand_ = out.size();
    return out;
  }

  // The batch the last Drain() handed out is settled in Python: its room is free.
  void Settled() { Locked([this] { FreeInHand(); }); }

  // Settled(), only if the lock is free right now: false (nothing done) if it is not.
  // Never waits, so the delivery thread may call it with the GIL held.
  bool TrySettled() { return TryLocked([this] { FreeInHand(); }); }

  // A Python thread starts (+1) or stops (-1) waiting for an outcome (a handle's
  // result(), concurrent.futures.wait()). While any does, a drain hands out what it has
  // at once instead of lingering for more: one send_async(...).result() after another
  // took the whole linger each, 2.3 ms against 0.11 for send().
  void Waiting(int change) { Locked([&] { ChangeWaiting(change); }); }

  // Waiting(), only if the lock is free right now (see TrySettled()).
  bool TryWaiting(int change) { return TryLocked([&] { ChangeWaiting(change); }); }

  // A Python thread starts (+1) or stops (-1) waiting for every outcome (flush(),
  // close()): drains linger no more once all of them are here.
  void Flushing(int change) { Locked([&] { ChangeFlushing(change); }); }

  // Flushing(), only if the lock is free right now (see TrySettled()).
  bool TryFlushing(int change) { return TryLocked([&] { ChangeFlushing(change); }); }

  void Wake() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++wake_generation_;
    }
    ready_.notify_all();
    room_.notify_all();
  }

 private:
  template <typename Step>
  void Locked(Step step) {
    std::lock_guard<std::mutex> lock(mutex_);
    step();
  }

  // Runs `step` with the lock held if it is free right now; false (nothing run) if not.
  template <typename Step>
  bool TryLocked(Step step) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    step();
    return true;
  }

  // The shared SendPlace of a result, made on first use (with mutex_ held).
  std::shared_ptr<const SendPlace> PlaceOf(const SendResult& result) {
    static constexpr size_t kMostPlaces = 4096;  // partitions a producer writes, with room
    const auto found = places_.find(result.partition_key);
    if (found != places_.end() && found->second->topic == result.topic &&
        found->second->broker_address == result.broker_address) {
      return found->second;
    }
    if (places_.size() >= kMostPlaces) places_.clear();
    auto place = std::make_shared<const SendPlace>(
        SendPlace{result.topic, result.partition_key, result.broker_address});
    places_[result.partition_key] = place;
    return place;
  }

  // Every send admitted and not settled has its outcome queued (with mutex_ held; a
  // send admitted meanwhile only makes this false, and its push is checked again).
  bool AllArrived() const { return items_.size() >= unsettled_.load(std::memory_order_relaxed); }

  // Outcomes arriving at most a kLingerGathers-th of the linger apart, on average, are
  // worth lingering for once all are in: the linger gathers a few of them per drain.
  static constexpr int kLingerGathers = 2;
  static constexpr int kArrivalGapWeight = 8;  // the average's weight for each new gap

  // Every outcome is here, and a thread waits for all of them or more are unlikely to
  // come within the linger (with mutex_ held).
  bool NothingToLingerFor() const {
    return AllArrived() &&
           (flushing_ > 0 || !arrival_gap_ || *arrival_gap_ * kLingerGathers > linger_);
  }

  void NoteArrival(std::chrono::steady_clock::time_point now) {  // with mutex_ held
    if (last_arrival_) {
      const auto gap = std::chrono::duration_cast<std::chrono::microseconds>(now - *last_arrival_);
      arrival_gap_ = arrival_gap_ ? *arrival_gap_ + (gap - *arrival_gap_) / kArrivalGapWeight : gap;
    }
    last_arrival_ = now;
  }

  void ChangeWaiting(int change) {  // with mutex_ held
    waiting_ += change;
    if (change > 0) ready_.notify_all();  // a lingering drain stops lingering
  }

  void ChangeFlushing(int change) {  // with mutex_ held
    flushing_ += change;
    // A lingering drain stops once every outcome is in; with some still to come, the
    // last one's Push() ends it. (Woken each time, the drainer was woken for every
    // send that waited for a place in a full window.)
    if (change > 0 && lingering_for_ > 0 && AllArrived()) ready_.notify_all();
  }

  void FreeInHand() {  // with mutex_ held
    if (in_hand_ == 0) return;
    unsettled_.fetch_sub(in_hand_, std::memory_order_relaxed);
    in_hand_ = 0;
    room_.notify_all();
  }

  const size_t limit_;
  const std::chrono::milliseconds linger_;
  std::mutex mutex_;
  std::condition_variable ready_;  // the drainer waits here for outcomes
  std::condition_variable room_;   // senders wait here for room
  std::vector<Delivery> items_;
  size_t in_hand_ = 0;             // the batch the last Drain() handed out
  std::atomic<size_t> unsettled_{0};  // admitted sends whose outcome Python has not settled
  std::atomic<std::thread::id> drainer_{};
  size_t lingering_for_ = 0;       // the count a lingering drain waits for (0: none)
  int waiting_ = 0;                // Python threads waiting for an outcome
  int flushing_ = 0;               // threads waiting for every outcome
  // The usual time between outcomes (a moving average; none before the second outcome),
  // and when the last one arrived.
  std::optional<std::chrono::microseconds> arrival_gap_;
  std::optional<std::chrono::steady_clock::time_point> last_arrival_;
  uint64_t wake_generation_ = 0;
  std::unordered_map<std::string, std::shared_ptr<const SendPlace>> places_;  // by key
};

}  // namespace tubemq::bindings
