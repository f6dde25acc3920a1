// Which partition a message goes to (behaviour.md §2.5): round robin per topic starting
// at a random place, skipping partitions of brokers that are shielded; or, when the
// message has a key, a stable hash of the key over the topic's partitions sorted by key,
// so that equal keys land on the same partition while the partition set is unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "meta/partition.h"

namespace tubemq::producer {

class PartitionRouter {
 public:
  using Usable = std::function<bool(const meta::Partition&)>;

  PartitionRouter();

  // nullptr when `partitions` is empty, or when `pinned` is set and names none of them.
  // A pinned partition (the caller's explicit choice) wins over key and round robin and
  // ignores `usable`, like a key. Keyed messages ignore `usable`: moving a key
  // to another partition would break the ordering the key promises. Round robin skips
  // unusable partitions, and takes the next one anyway when all are unusable.
  // `keys`, when given, holds partitions[i].Key() at index i, computed once by the caller,
  // so that keyed and pinned sends build no strings.
  const meta::Partition* Choose(const std::string& topic,
                                const std::vector<meta::Partition>& partitions,
                                const std::optional<std::string>& key, const Usable& usable,
                                const std::optional<std::string>& pinned = std::nullopt,
                                const std::vector<std::string>* keys = nullptr);

  // FNV-1a, 64 bit: stable across processes, platforms and versions.
  static uint64_t StableHash(std::string_view key);

 private:
  std::mt19937_64 random_;
  std::map<std::string, uint64_t> next_by_topic_;
};

}  // namespace tubemq::producer
