// A standalone driver for libFuzzer-style targets, so that every fuzz target builds with g++
// and runs briefly inside ctest. It feeds each corpus file, then mutated copies of them
// (bit flips, byte insertions and deletions, splices) from a fixed seed, for a bounded count.
// With clang, the same targets link against libFuzzer instead (docs/testing.md).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  // usage: fuzz_X [-runs=N] [-seed=S] CORPUS_DIR_OR_FILE...
  long runs = 2000;
  unsigned seed = 1;
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-runs=", 0) == 0)
      runs = std::atol(arg.c_str() + 6);
    else if (arg.rfind("-seed=", 0) == 0)
      seed = static_cast<unsigned>(std::atol(arg.c_str() + 6));
    else {
      std::filesystem::path p(arg);
      auto add = [&](const std::filesystem::path& file) {
        std::ifstream in(file, std::ios::binary);
        corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      };
      if (std::filesystem::is_directory(p)) {
        for (auto& entry : std::filesystem::recursive_directory_iterator(p))
          if (entry.is_regular_file()) add(entry.path());
      } else {
        add(p);
      }
    }
  }
  if (corpus.empty()) corpus.emplace_back();
  for (auto& input : corpus)
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());

  std::mt19937 rng(seed);
  const char interesting[] = "${}[]()'\":-*!&|<>=.,\n\t #{{}}0123456789abcxyz\\\x00\xff";
  for (long r = 0; r < runs; ++r) {
    std::string input = corpus[rng() % corpus.size()];
    int mutations = 1 + static_cast<int>(rng() % 8);
    for (int m = 0; m < mutations; ++m) {
      switch (rng() % 5) {
        case 0:
          if (!input.empty()) input[rng() % input.size()] ^= static_cast<char>(1u << (rng() % 8));
          break;
        case 1:
          input.insert(input.begin() + static_cast<long>(rng() % (input.size() + 1)),
                       interesting[rng() % (sizeof(interesting) - 1)]);
          break;
        case 2:
          if (!input.empty()) input.erase(rng() % input.size(), 1 + rng() % 4);
          break;
        case 3: {
          const std::string& other = corpus[rng() % corpus.size()];
          if (!other.empty()) {
            size_t from = rng() % other.size();
            input.insert(rng() % (input.size() + 1), other.substr(from, 1 + rng() % 32));
          }
          break;
        }
        default:
          if (!input.empty()) input.resize(rng() % input.size());
      }
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  std::printf("fuzz: %zu corpus inputs and %ld mutated inputs ran without a crash\n", corpus.size(),
              runs);
  return 0;
}
