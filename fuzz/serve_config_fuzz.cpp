// The `serve:` section of kiln.yml: the input is put under `serve:` (each line indented), so
// every mutation lands in what `kiln serve` reads (listen, tls, tokens, repositories, polling,
// trusted authors). A ServeConfig or an invalid_input error at kiln.yml with a line, never a
// crash or an escaped yaml-cpp exception; an accepted configuration has a port in 0..65535 and
// repositories with an owner/name, a clone URL and distinct names.
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "kiln/config/host_config.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string text = "serve:\n  ";
  for (char c : input) {
    text += c;
    if (c == '\n') text += "  ";
  }
  auto config = kiln::config::parse_host_config(text, "/etc/kiln/kiln.yml");
  if (!config) {
    check(config.error().code == kiln::ErrorCode::invalid_input);
    check(config.error().where.file == "/etc/kiln/kiln.yml");
    return 0;
  }
  const auto& serve = config->serve;
  check(serve.listen_port >= 0 && serve.listen_port <= 65535);
  std::set<std::string> names;
  for (const auto& repository : serve.repositories) {
    check(repository.name.find('/') != std::string::npos);
    check(!repository.clone_url.empty());
    check(names.insert(repository.name).second);
  }
  return 0;
}
