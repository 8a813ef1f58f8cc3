// Fuzz target for what a step writes back to the runner: the first line of the input is a
// secret, the rest is fed as step output lines (workflow commands included, some as pieces of
// long lines) and as the text of the GITHUB_ENV / GITHUB_OUTPUT and GITHUB_PATH files. Must
// never crash or hang. Checks three properties: a registered secret (without '*') never appears
// in what reaches the log sink, a line in pieces shows exactly what the whole line masked shows,
// and command escaping round-trips.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/exec/file_commands.h"
#include "kiln/exec/log_sink.h"
#include "kiln/exec/masker.h"
#include "kiln/exec/step_output.h"
#include "kiln/exec/workflow_commands.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::exec;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto nl = input.find('\n');
  std::string_view secret = input.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);

  (void)parse_key_value_file(rest, "GITHUB_ENV");
  (void)parse_path_file(rest);

  RecordingLogSink sink;
  Masker masker;
  masker.add(secret);
  {
    StepOutput output(sink, masker);
    std::size_t start = 0;
    int line_number = 0;
    while (start < rest.size()) {
      auto end = rest.find('\n', start);
      if (end == std::string_view::npos) end = rest.size();
      auto line = rest.substr(start, end - start);
      // Every third line arrives as two or more pieces of a long line, cut where its first byte
      // says.      // What reaches the sink of it is exactly the mask of the whole line.
      if (++line_number % 3 == 0 && line.size() > 1) {
        const std::size_t step = 1 + static_cast<unsigned char>(line[0]) % (line.size() - 1);
        const std::size_t before = sink.events().size();
        for (std::size_t at = 0; at < line.size(); at += step)
          output.on_line(kiln::core::Stream::out, line.substr(at, step), at + step < line.size());
        std::string shown;
        auto events = sink.events();
        for (std::size_t i = before; i < events.size(); ++i) shown += events[i].text;
        if (shown != masker.mask(line)) std::abort();
      } else {
        output.on_line(kiln::core::Stream::out, line, false);
      }
      start = end + 1;
    }
    output.finish();
  }
  // Pieces of one long line are joined before looking: a secret split across them must not show.
  bool checkable = secret.find_first_not_of(" \t\r\f\v") != std::string_view::npos &&
                   secret.find('*') == std::string_view::npos &&
                   secret.find('\n') == std::string_view::npos;
  if (checkable) {
    std::string joined;
    for (const auto& event : sink.events()) {
      joined += event.text;
      if (event.annotation)
        joined += "\n" + event.annotation->title + "\n" + event.annotation->file;
      if (!event.partial) joined += '\n';
    }
    if (joined.find(secret) != std::string::npos) std::abort();
  }

  if (unescape_command_data(escape_command_data(rest)) != rest) std::abort();
  if (unescape_command_property(escape_command_property(rest)) != rest) std::abort();
  return 0;
}
