#include "kiln/container/cleanup.h"

#include <sstream>

#include "kiln/store/process_identity.h"

namespace kiln::container {
namespace {

struct Labelled {
  std::string name;
  store::ProcessIdentity owner;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// "NAME PID START HOST" per object, from inspect templates that both engines understand.
Result<std::vector<Labelled>> inspect_owners(const EngineCli& engine, const std::string& kind,
                                             const std::vector<std::string>& ids,
                                             const std::string& labels_field,
                                             const std::string& name_field) {
  std::vector<Labelled> out;
  if (ids.empty()) return out;
  std::string format = fmt::format(
      "{{{{{0}}}}} {{{{index {1} \"{2}\"}}}} {{{{index {1} \"{3}\"}}}} {{{{index {1} \"{4}\"}}}}",
      name_field, labels_field, k_label_owner_pid, k_label_owner_start, k_label_owner_host);
  std::vector<std::string> args{kind, "inspect", "--format", format};
  args.insert(args.end(), ids.begin(), ids.end());
  KILN_TRY(auto text, engine.run(args));
  for (const auto& line : split_lines(text)) {
    std::istringstream fields(line);
    Labelled object;
    std::string pid, start;
    fields >> object.name >> pid >> start >> object.owner.host;
    try {
      object.owner.pid = std::stoi(pid);
      object.owner.start_time = std::stoll(start);
    } catch (...) {
      continue;  // a label kiln did not write: not ours to judge
    }
    out.push_back(std::move(object));
  }
  return out;
}

bool orphaned(const Labelled& object, const std::string& host) {
  if (object.owner.pid <= 0) return false;
  if (!object.owner.host.empty() && object.owner.host != "<no" && object.owner.host != host)
    return false;
  return !store::is_process_alive(object.owner);
}

}  // namespace

Result<SweepResult> sweep_orphans(const EngineCli& engine) {
  SweepResult result;
  const std::string host = store::host_name();
  const std::string filter = fmt::format("label={}", k_label_owner_pid);

  KILN_TRY(auto container_ids, engine.run({"ps", "-a", "-q", "--no-trunc", "--filter", filter}));
  KILN_TRY(auto containers, inspect_owners(engine, "container", split_lines(container_ids),
                                           ".Config.Labels", ".Name"));
  for (const auto& object : containers) {
    if (!orphaned(object, host)) continue;
    std::string name = object.name;
    if (name.starts_with("/")) name.erase(0, 1);  // docker's names start with '/'
    KILN_TRY_VOID(engine.remove_container(name));
    result.containers.push_back(name);
  }

  KILN_TRY(auto network_ids, engine.run({"network", "ls", "-q", "--filter", filter}));
  KILN_TRY(auto networks,
           inspect_owners(engine, "network", split_lines(network_ids), ".Labels", ".Name"));
  for (const auto& object : networks) {
    if (!orphaned(object, host)) continue;
    KILN_TRY_VOID(engine.remove_network(object.name));
    result.networks.push_back(object.name);
  }
  return result;
}

}  // namespace kiln::container
