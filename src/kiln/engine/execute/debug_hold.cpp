#include "kiln/engine/execute/debug_hold.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kiln::engine {

using json = nlohmann::json;

std::filesystem::path debug_hold_path(const std::filesystem::path& kiln_dir, std::int64_t run_id,
                                      std::string_view job) {
  std::string name = std::to_string(run_id) + "-";
  for (char c : job)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return kiln_dir / "holds" / (name.substr(0, 120) + ".json");
}

Status write_debug_hold(const std::filesystem::path& path, const DebugHold& hold) {
  json doc = {{"run_id", hold.run_id},
              {"job", hold.job},
              {"engine", hold.engine},
              {"container", hold.container},
              {"workspace", hold.workspace.string()},
              {"env", hold.env},
              {"gpus", hold.gpus},
              {"expires_at_ms", hold.expires_at_ms},
              {"owner_pid", hold.owner_pid},
              {"owner_start", hold.owner_start}};
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  auto temp = path;
  temp += ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail(ErrorCode::io_error, "cannot write {}", temp.string());
  std::string text = doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok) return fail(ErrorCode::io_error, "cannot write {}", temp.string());
  std::filesystem::rename(temp, path, ec);
  if (ec) return fail(ErrorCode::io_error, "cannot write {}: {}", path.string(), ec.message());
  return {};
}

Result<DebugHold> read_debug_hold(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::not_found, "no hold record {}", path.string());
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  auto bad = [&] {
    return make_error(ErrorCode::invalid_input, "not a debugging hold record", {path.string()});
  };
  if (!doc.is_object()) return bad();
  DebugHold hold;
  auto get = [&](const char* key, auto& target) {
    auto it = doc.find(key);
    if (it == doc.end()) return false;
    using T = std::decay_t<decltype(target)>;
    if constexpr (std::is_same_v<T, std::string>) {
      if (!it->is_string()) return false;
      target = it->template get<std::string>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!it->is_number_integer()) return false;
      target = it->template get<T>();
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (!it->is_array()) return false;
      for (const auto& item : *it) {
        if (!item.is_string()) return false;
        target.push_back(item.template get<std::string>());
      }
    } else {
      if (!it->is_object()) return false;
      for (const auto& [name, value] : it->items()) {
        if (!value.is_string()) return false;
        target[name] = value.template get<std::string>();
      }
    }
    return true;
  };
  std::string workspace;
  if (!get("run_id", hold.run_id) || !get("job", hold.job) || !get("engine", hold.engine) ||
      !get("container", hold.container) || !get("workspace", workspace) || !get("env", hold.env) ||
      !get("gpus", hold.gpus) || !get("expires_at_ms", hold.expires_at_ms) ||
      !get("owner_pid", hold.owner_pid) || !get("owner_start", hold.owner_start))
    return bad();
  hold.workspace = workspace;
  return hold;
}

std::string_view to_string(HoldEnd end) {
  switch (end) {
    case HoldEnd::released:
      return "released";
    case HoldEnd::expired:
      return "its time ran out";
    case HoldEnd::cancelled:
      return "the run was cancelled";
  }
  return "released";
}

HoldEnd wait_debug_hold(const std::filesystem::path& path,
                        std::chrono::system_clock::time_point deadline,
                        const exec::CancelToken* cancel) {
  using namespace std::chrono_literals;
  while (true) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return HoldEnd::released;
    auto left = deadline - std::chrono::system_clock::now();
    if (left <= 0s) return HoldEnd::expired;
    auto step = std::min<std::chrono::milliseconds>(
        200ms, std::chrono::duration_cast<std::chrono::milliseconds>(left) + 1ms);
    if (cancel != nullptr) {
      if (cancel->wait_for(step)) return HoldEnd::cancelled;
    } else {
      std::this_thread::sleep_for(step);
    }
  }
}

std::string clock_time(std::chrono::system_clock::time_point when) {
  std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:02}:{:02}:{:02} UTC", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace kiln::engine
