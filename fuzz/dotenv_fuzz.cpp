// The dotenv reader (`--secret-file`, `--env-file`) and the GITHUB_ENV / GITHUB_OUTPUT reader on
// arbitrary bytes: values or an invalid_input error at the file, never a crash or an escaped
// exception. Every dotenv key is a name and a dotenv error has a line; what the GITHUB_ENV reader
// accepted, written back in NAME<<DELIMITER form, reads back the same.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kiln/core/dotenv.h"
#include "kiln/exec/file_commands.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  auto dotenv = kiln::core::parse_dotenv(text, "secrets.env");
  if (dotenv) {
    for (const auto& [key, value] : *dotenv) {
      check(!key.empty() && key.find_first_of(" \t=#'\"\n") == std::string::npos);
      (void)value;
    }
  } else {
    check(dotenv.error().code == kiln::ErrorCode::invalid_input);
    check(dotenv.error().where.file == "secrets.env" && dotenv.error().where.line >= 1);
  }

  auto env = kiln::exec::parse_key_value_file(text, "GITHUB_ENV");
  if (!env) {
    check(env.error().code == kiln::ErrorCode::invalid_input);
    return 0;
  }
  std::string written;
  kiln::exec::KeyValues expected;
  for (const auto& [key, value] : *env) {
    check(!key.empty());
    // A name ending in '<' reads as NAME<<... only in the NAME=value form, and a value's last
    // '\r' is taken for part of a line break: both cannot be written in this form.
    if (key.back() == '<' || (!value.empty() && value.back() == '\r')) continue;
    std::string delimiter = "EOF";
    while (value.find(delimiter) != std::string::npos) delimiter += '_';
    written += key + "<<" + delimiter + "\n" + value + "\n" + delimiter + "\n";
    expected.emplace_back(key, value);
  }
  auto again = kiln::exec::parse_key_value_file(written, "GITHUB_ENV");
  check(again && *again == expected);
  return 0;
}
