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
                                               const std::optional<std::string>& pinned,
                                               const std::vector<std::string>* keys) {
  if (partitions.empty()) return nullptr;
  if (pinned || key) {
    std::vector<std::string> built;
    if (keys == nullptr || keys->size() != partitions.size()) {
      built.reserve(partitions.size());
      for (const auto& partition : partitions) built.push_back(partition.Key());
      keys = &built;
    }
    if (pinned) {
      for (size_t i = 0; i < partitions.size(); ++i) {
        if ((*keys)[i] == *pinned) return &partitions[i];
      }
      return nullptr;
    }
    std::vector<size_t> sorted(partitions.size());
    for (size_t i = 0; i < sorted.size(); ++i) sorted[i] = i;
    std::sort(sorted.begin(), sorted.end(),
              [keys](size_t a, size_t b) { return (*keys)[a] < (*keys)[b]; });
    return &partitions[sorted[StableHash(*key) % sorted.size()]];
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
