// A driver for fuzz_target.cc without libFuzzer: replays every file under the corpus
// directories given, then runs seeded random mutations of them (bit flips, byte
// changes, inserts, cuts, splices, selector changes) until a time budget is spent.
// A crash, a sanitizer report or a hang fails the ctest that runs it; the exec count
// is printed. Usage: tubemq_fuzz_replay [--seconds N] [--seed S] DIR...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string Mutate(const std::vector<std::string>& corpus, std::mt19937_64& random) {
  std::string input = corpus[random() % corpus.size()];
  const int rounds = 1 + static_cast<int>(random() % 8);
  for (int round = 0; round < rounds; ++round) {
    const size_t at = input.empty() ? 0 : random() % input.size();
    switch (random() % 8) {
      case 0:  // flip a bit
        if (!input.empty()) input[at] ^= static_cast<char>(1u << (random() % 8));
        break;
      case 1:  // an interesting byte
        if (!input.empty()) {
          static const char kBytes[] = {0, 1, 0x7f, static_cast<char>(0x80),
                                        static_cast<char>(0xff), ':', ',', '#', '=', '"', '[', '{'};
          input[at] = kBytes[random() % sizeof kBytes];
        }
        break;
      case 2:  // insert random bytes
        for (size_t n = random() % 8 + 1; n > 0; --n) {
          input.insert(input.begin() + static_cast<std::ptrdiff_t>(at),
                       static_cast<char>(random()));
        }
        break;
      case 3:  // cut the tail
        input.resize(at);
        break;
      case 4:  // erase a run
        if (!input.empty()) input.erase(at, random() % 16 + 1);
        break;
      case 5: {  // splice in part of another entry
        const std::string& other = corpus[random() % corpus.size()];
        if (!other.empty()) {
          const size_t from = random() % other.size();
          input.insert(at, other.substr(from, random() % 32 + 1));
        }
        break;
      }
      case 6:  // another parser for the same bytes
        if (!input.empty()) input[0] = static_cast<char>(random() % 9);
        break;
      default:  // a big-endian length or count made absurd
        if (input.size() >= 4) {
          const size_t pos = random() % (input.size() - 3);
          const uint32_t value = (random() % 2) ? 0xffffffffu : static_cast<uint32_t>(random());
          for (int i = 0; i < 4; ++i) input[pos + i] = static_cast<char>(value >> (24 - 8 * i));
        }
        break;
    }
  }
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  uint64_t seed = 20240101;
  std::vector<std::string> corpus;
  size_t files = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(argv[i])) {
        if (!entry.is_regular_file()) continue;
        std::ifstream file(entry.path(), std::ios::binary);
        corpus.emplace_back(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
        ++files;
      }
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "no corpus files given\n");
    return 2;
  }
  for (const std::string& input : corpus) Run(input);
  std::mt19937_64 random(seed);
  uint64_t execs = corpus.size();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  while (std::chrono::steady_clock::now() < deadline) {
    for (int batch = 0; batch < 256; ++batch) Run(Mutate(corpus, random));
    execs += 256;
  }
  std::printf("replayed %zu corpus files, %llu executions in %.0f s (seed %llu), no crash\n",
              files, static_cast<unsigned long long>(execs), seconds,
              static_cast<unsigned long long>(seed));
  return 0;
}
