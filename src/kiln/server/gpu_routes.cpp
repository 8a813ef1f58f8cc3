#include "kiln/server/gpu_routes.h"

#include <charconv>

#include <fmt/format.h>

#include "kiln/gpu/topology.h"
#include "kiln/server/api_json.h"
#include "kiln/store/process_identity.h"

namespace kiln::server {

using json = nlohmann::ordered_json;

namespace {

constexpr std::chrono::milliseconds k_sample_deadline{1000};

json optional_number(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

json reading_json(const std::optional<GpuReading>& reading) {
  if (!reading) return nullptr;
  return {{"source", reading->source},
          {"time", reading->time},
          {"utilization_pct", optional_number(reading->utilization_pct)},
          {"memory_utilization_pct", optional_number(reading->memory_utilization_pct)},
          {"temperature_c", optional_number(reading->temperature_c)},
          {"power_w", optional_number(reading->power_w)}};
}

json holder_json(const std::optional<GpuHolder>& holder) {
  if (!holder) return nullptr;
  return {{"run_id", holder->run_id},
          {"run_number", holder->run_number},
          {"repository", holder->repository},
          {"workflow", holder->workflow},
          {"job_id", holder->job_id ? json(holder->job_id) : json(nullptr)},
          {"job", holder->job},
          {"url", fmt::format("/ui/runs/{}", holder->run_id)}};
}

// The job row a scheduler token ends with ("<prefix>-<job id>"); 0 when it ends otherwise.
std::int64_t job_of_token(const std::string& token) {
  const auto dash = token.rfind('-');
  if (dash == std::string::npos) return 0;
  std::int64_t id = 0;
  const char* first = token.data() + dash + 1;
  const char* last = token.data() + token.size();
  auto [end, error] = std::from_chars(first, last, id);
  return error == std::errc() && end == last && first != last ? id : 0;
}

}  // namespace

std::optional<GpuHolder> lease_holder(store::Store& store, const store::GpuLease& lease,
                                      const store::ProcessIdentity& self) {
  if (lease.run_id <= 0 || lease.owner.pid != self.pid || lease.owner.host != self.host)
    return std::nullopt;
  if (lease.owner.start_time && self.start_time && lease.owner.start_time != self.start_time)
    return std::nullopt;
  auto run = store.get_run(lease.run_id);
  if (!run) return std::nullopt;
  GpuHolder holder{run->id, run->number, run->repository, run->workflow_name, 0, ""};
  if (const auto id = job_of_token(lease.job_token); id > 0)
    if (auto job = store.get_job(id); job && job->run_id == run->id) {
      holder.job_id = job->id;
      holder.job = job->key;
    }
  return holder;
}

GpuReading reading_of(const gpu::GpuSample& sample) {
  return {"live",
          sample.time_ms,
          sample.utilization_pct,
          sample.memory_utilization_pct,
          sample.temperature_c,
          sample.power_w};
}

std::optional<GpuReading> latest_job_reading(store::Store& store, std::int64_t job_id,
                                             int gpu_index) {
  auto samples = store.list_gpu_samples(job_id);
  if (!samples) return std::nullopt;
  const store::GpuSampleRecord* newest = nullptr;
  for (const auto& sample : *samples)
    if (sample.gpu_index == gpu_index && (!newest || sample.time >= newest->time)) newest = &sample;
  if (!newest) return std::nullopt;
  return GpuReading{"job",
                    newest->time,
                    newest->utilization_pct,
                    newest->memory_utilization_pct,
                    newest->temperature_c,
                    newest->power_w};
}

json gpus_json(const gpu::Inventory& inventory, std::span<const engine::GpuState> states,
               std::span<const std::optional<GpuReading>> readings,
               std::span<const std::optional<GpuHolder>> holders) {
  json gpus = json::array();
  for (std::size_t i = 0; i < inventory.gpus.size(); ++i) {
    const auto& info = inventory.gpus[i];
    json gpu = i < states.size() ? to_json(static_cast<int>(i), states[i])
                                 : to_json(static_cast<int>(i), engine::GpuState{});
    gpu["uuid"] = info.uuid;
    gpu["vendor"] = info.vendor;
    gpu["model"] = info.model;
    gpu["arch"] = info.arch;
    gpu["pci_bus_id"] = info.pci_bus_id;
    gpu["numa_node"] = info.numa_node;
    gpu["memory_total_mib"] = info.memory_total_mib;
    gpu["memory_used_mib"] = info.memory_used_mib;
    gpu["driver_version"] = info.driver_version;
    gpu["telemetry"] = reading_json(i < readings.size() ? readings[i] : std::nullopt);
    gpu["holder"] = holder_json(i < holders.size() ? holders[i] : std::nullopt);
    gpus.push_back(std::move(gpu));
  }
  json links = json::array();
  for (const auto& link : inventory.links)
    links.push_back({{"a", link.a},
                     {"b", link.b},
                     {"kind", std::string(gpu::link_kind_name(link.kind))},
                     {"width", link.width}});
  const gpu::Topology topology(inventory);
  json islands = json::array();
  for (int island = 0; island < topology.island_count(); ++island)
    islands.push_back(topology.members(island));
  json matrix = json::array();
  const int n = static_cast<int>(inventory.gpus.size());
  for (int a = 0; a < n; ++a) {
    json row = json::array();
    for (int b = 0; b < n; ++b)
      row.push_back(a == b ? json(nullptr)
                           : json(std::string(gpu::link_kind_name(inventory.connection(a, b)))));
    matrix.push_back(std::move(row));
  }
  return {{"provider", inventory.provider},
          {"gpus", std::move(gpus)},
          {"links", std::move(links)},
          {"topology", {{"islands", std::move(islands)}, {"matrix", std::move(matrix)}}}};
}

Result<json> host_gpus_json(engine::GpuSupervisor& supervisor, store::Store& store) {
  KILN_TRY(auto states, supervisor.states());
  KILN_TRY(const gpu::Inventory* inventory, supervisor.inventory());
  const auto n = inventory->gpus.size();
  std::vector<std::optional<GpuReading>> readings(n);
  if (auto sampler = supervisor.make_sampler()) {
    std::vector<int> indices;
    for (const auto& info : inventory->gpus) indices.push_back(info.index);
    // A sampler that fails or misses its deadline leaves the stored samples to answer.
    if (auto samples = sampler->sample(indices, k_sample_deadline))
      for (const auto& sample : *samples)
        if (sample.index >= 0 && static_cast<std::size_t>(sample.index) < n)
          readings[static_cast<std::size_t>(sample.index)] = reading_of(sample);
  }
  std::vector<std::optional<GpuHolder>> holders(n);
  const auto self = store::current_process();
  for (std::size_t i = 0; i < n && i < states.size(); ++i) {
    if (!states[i].lease) continue;
    holders[i] = lease_holder(store, *states[i].lease, self);
    if (!readings[i] && holders[i] && holders[i]->job_id)
      readings[i] = latest_job_reading(store, holders[i]->job_id, static_cast<int>(i));
  }
  return gpus_json(*inventory, states, readings, holders);
}

}  // namespace kiln::server
