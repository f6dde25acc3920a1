#include "consumer/store_watch.h"

#include <charconv>

namespace tubemq::consumer {

std::string StoreWatch::StoreOf(const std::string& key) {
  // A partition id is storeIndex * 10000 + its index within the store (behaviour.md
  // §0.1): partitions of another store of the topic keep an index of their own.
  const size_t colon = key.rfind(':');
  if (colon == std::string::npos) return key;
  int64_t id = 0;
  const char* first = key.data() + colon + 1;
  const char* last = key.data() + key.size();
  const auto [end, error] = std::from_chars(first, last, id);
  if (error != std::errc() || end != last) return key;  // not a partition key: no siblings
  return key.substr(0, colon) + "#" + std::to_string(id / kPartitionsPerStoreBase);
}

uint64_t StoreWatch::Rest(const std::string& key, uint64_t token) {
  std::lock_guard<std::mutex> lock(mutex_);
  Store& store = stores_[StoreOf(key)];
  const uint64_t id = ++next_id_;
  store.resting[key] = Resting{token, id, store.end};
  return id;
}

bool StoreWatch::Expire(const std::string& key, uint64_t rest_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto store = stores_.find(StoreOf(key));
  if (store == stores_.end()) return false;
  const auto resting = store->second.resting.find(key);
  if (resting == store->second.resting.end() || resting->second.id != rest_id) return false;
  store->second.resting.erase(resting);
  return true;
}

std::vector<StoreWatch::Wake> StoreWatch::Reached(const std::string& key, int64_t max_offset,
                                                  Clock::time_point now, bool* busy) {
  std::vector<Wake> woken;
  std::lock_guard<std::mutex> lock(mutex_);
  Store& store = stores_[StoreOf(key)];
  const bool grew = max_offset > store.end;
  const bool after_quiet = !store.grew_at || now - *store.grew_at >= kQuietStore;
  if (grew) {
    store.end = max_offset;
    if (after_quiet) store.growing_since = now;
    store.grew_at = now;
  }
  if (busy != nullptr) {
    *busy = store.grew_at && now - *store.grew_at < kQuietStore &&
            now - store.growing_since >= kSteadyWrites;
  }
  if (!grew) return woken;  // nothing new since the last reply showed
  for (auto it = store.resting.begin(); it != store.resting.end();) {
    if (it->first != key && it->second.end_seen < max_offset) {
      woken.emplace_back(it->first, it->second.token);
      it = store.resting.erase(it);
    } else {
      ++it;
    }
  }
  return woken;
}

}  // namespace tubemq::consumer
