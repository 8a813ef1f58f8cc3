// Fuzz target for container `options:` (kiln/container/options.h) and durations in both spellings
// (core/time.h parse_duration, which health-check options go through): the input is an options
// string. Must never crash
// or hang. Properties checked: whatever is accepted contains no refused flag (--privileged, a host
// namespace, a GPU flag that would bypass the grant), and splitting the words of a quoted re-join
// gives the same words back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/container/options.h"
#include "kiln/core/time.h"

namespace {

std::string quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out.push_back(c);
  }
  return out + "'";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto words = kiln::container::split_words(input);
  if (words) {
    std::string joined;
    for (const auto& word : *words) joined += quote(word) + " ";
    auto again = kiln::container::split_words(joined);
    if (!again || *again != *words) std::abort();
  }
  // The health durations of services go through this parser too; nothing it accepts is negative.
  for (auto syntax : {kiln::core::DurationSyntax::kiln, kiln::core::DurationSyntax::engine})
    if (auto duration = kiln::core::parse_duration(input, syntax);
        duration && duration->count() < 0)
      std::abort();
  auto options = kiln::container::parse_options(input, {"fuzz.yml", 1, 1});
  if (!options) return 0;
  const auto& args = options->args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--privileged" || arg == "--gpus" || arg == "--network" || arg == "--net")
      std::abort();
    bool takes_namespace = arg == "--pid" || arg == "--userns" || arg == "--uts";
    if (takes_namespace && i + 1 < args.size() && args[i + 1] == "host") std::abort();
    if (arg == "--volume" && i + 1 < args.size() && kiln::container::refused_volume(args[i + 1]))
      std::abort();
  }
  return 0;
}
