// Fuzz target for GitHub filter patterns: the first line of the input is a pattern, the other
// lines are subjects. The pattern is compiled alone and as a filter list, and matched against
// the subjects and a few fixed paths. Must never crash or hang; bad patterns are fine. Also
// checks one property: a pattern that escapes every byte of a subject matches exactly it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/workflow/glob.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    lines.push_back(input.substr(start, end - start));
    start = end + 1;
  }
  std::vector<std::string_view> subjects(lines.begin() + 1, lines.end());
  static const std::string_view fixed[] = {"",
                                           "main",
                                           "releases/v1.2.3",
                                           "docs/a/b/README.md",
                                           "src/kiln/workflow/glob.cpp",
                                           "a/b/c/d/e/f/g/h/i/j"};
  subjects.insert(subjects.end(), std::begin(fixed), std::end(fixed));

  if (auto glob = kiln::workflow::Glob::compile(lines[0])) {
    for (std::string_view subject : subjects) (void)glob->matches(subject);
  }
  if (auto list = kiln::workflow::FilterList::compile({std::string(lines[0]), "!**/*.md"})) {
    for (std::string_view subject : subjects) (void)list->matches(subject);
  }

  for (std::string_view subject : subjects) {
    std::string escaped;
    for (char c : subject) {
      escaped += '\\';
      escaped += c;
    }
    auto exact = kiln::workflow::Glob::compile(escaped);
    if (!exact || !exact->matches(subject) || exact->matches(std::string(subject) + "x"))
      std::abort();
  }
  return 0;
}
