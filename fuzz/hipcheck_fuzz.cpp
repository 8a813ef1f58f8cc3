// Fuzz target for hipcheck's lexer and scanner: any bytes must lex and scan without a crash,
// and the results must be self-consistent (tokens in order and inside the input, findings
// inside the file and sorted, a second scan identical).
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "kiln/hipcheck/lexer.h"
#include "kiln/hipcheck/scanner.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::hipcheck;
  std::string_view source(reinterpret_cast<const char*>(data), size);

  std::vector<Token> tokens;
  LexStats stats = lex(source, tokens);
  check(stats.code_lines <= stats.lines + 1);
  std::uint32_t previous_end = 0;
  for (const Token& t : tokens) {
    check(t.length > 0);
    check(t.offset >= previous_end);
    check(static_cast<std::size_t>(t.offset) + t.length <= size);
    check(t.line_start <= t.offset);
    check(t.line >= 1 && t.line <= stats.lines + 1);
    previous_end = t.offset + t.length;
  }

  for (std::string_view path : {"fuzz.cu", "fuzz.cpp"}) {
    FileScan scan = scan_source(path, source);
    FileScan again = scan_source(path, source, nullptr, tokens);
    check(scan.findings.size() == again.findings.size());
    for (std::size_t i = 0; i < scan.findings.size(); ++i) {
      const Finding& f = scan.findings[i];
      check(f.line >= 1 && static_cast<std::uint32_t>(f.line) <= stats.lines + 1);
      check(f.column >= 1 && f.end_column > f.column);
      check(f.fingerprint == again.findings[i].fingerprint);
      if (i > 0) {
        const Finding& p = scan.findings[i - 1];
        check(p.line < f.line || (p.line == f.line && p.column <= f.column));
      }
    }
    // Macros the file defines, fed back as another file's: the rescan must hold up too.
    if (!scan.macros.empty()) {
      MacroMap macros;
      for (CudaMacro m : scan.macros) {
        m.file = "other.h";
        macros.emplace(m.name, std::move(m));
      }
      scan_source(path, source, &macros, tokens);
    }
  }
  return 0;
}
