#include "producer/partition_router.h"

#include <algorithm>

namespace tubemq::producer {

PartitionRouter::PartitionRouter() : random_(std::random_device{}()) {}

uint64_t PartitionRouter::StableHash(std::string_view key) {
  uint64_t hash = 14695981039346656037ull;  // the FNV-1a 64-bit offset basis
  for (unsigned char c : key) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

const meta::Partition* PartitionRouter::Choose(const std::string& topic,
                                               const std::vector<meta::Partition>& partitions,
                                               const std::optional<std::string>& key,
                                               const Usable& usable,
                                               const std::optional<std::string>& pinned) {
  if (partitions.empty()) return nullptr;
  if (pinned) {
    for (const auto& partition : partitions) {
      if (partition.Key() == *pinned) return &partition;
    }
    return nullptr;
  }
  if (key) {
    std::vector<const meta::Partition*> sorted;
    sorted.reserve(partitions.size());
    for (const auto& partition : partitions) sorted.push_back(&partition);
    std::sort(sorted.begin(), sorted.end(), [](const meta::Partition* a, const meta::Partition* b) {
      return a->Key() < b->Key();
    });
    return sorted[StableHash(*key) % sorted.size()];
  }
  auto [slot, inserted] = next_by_topic_.try_emplace(topic, 0);
  if (inserted) slot->second = random_();
  const size_t size = partitions.size();
  for (size_t tried = 0; tried < size; ++tried) {
    const meta::Partition& candidate = partitions[slot->second++ % size];
    if (!usable || usable(candidate)) return &candidate;
  }
  return &partitions[slot->second++ % size];
}

}  // namespace tubemq::producer
