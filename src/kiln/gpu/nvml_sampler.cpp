// The NVML sampler (telemetry.h): NVML initialised once for the sampler's life, device handles
// cached, every query optional.

#include <chrono>
#include <map>
#include <mutex>

#include "kiln/gpu/deadline.h"
#include "kiln/gpu/nvml_api.h"
#include "kiln/gpu/nvml_provider.h"
#include "kiln/gpu/telemetry.h"

namespace kiln::gpu {

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the query threads share with the sampler. A thread abandoned at its deadline may still
// hold it, so it owns the NVML init and shuts NVML down only when the last user lets go.
constexpr auto k_energy_interval = std::chrono::seconds(10);

struct NvmlSession {
  std::mutex mutex;  // one query at a time (a late abandoned thread against the next call)
  std::shared_ptr<const NvmlApi> api;
  bool initialised = false;
  std::map<int, nvml::Device> handles;
  // nvmlDeviceGetTotalEnergyConsumption costs about 4 ms on an H200 (every other query a few
  // microseconds; docs/gpu-verification.md): the counter is read at most every
  // k_energy_interval per GPU, and the summary integrates power after the last reading.
  std::map<int, std::chrono::steady_clock::time_point> energy_read;

  ~NvmlSession() {
    if (initialised) api->shutdown();
  }

  Result<std::vector<GpuSample>> sample(const std::vector<int>& indices) {
    std::lock_guard lock(mutex);
    if (!initialised) {
      if (auto rc = api->init(); rc != nvml::k_success)
        return fail(ErrorCode::unsupported, "NVML cannot start: {}", api->describe(rc));
      initialised = true;
    }
    std::vector<GpuSample> samples;
    samples.reserve(indices.size());
    for (int index : indices) {
      auto handle = handles.find(index);
      if (handle == handles.end()) {
        nvml::Device device{};
        if (auto rc = api->get_handle(static_cast<unsigned>(index), &device); rc != nvml::k_success)
          return fail(ErrorCode::io_error, "NVML: GPU {}: handle: {}", index, api->describe(rc));
        handle = handles.emplace(index, device).first;
      }
      nvml::Device device = handle->second;
      GpuSample s;
      s.index = index;
      s.time_ms = now_ms();
      nvml::Memory memory{};
      if (auto rc = api->get_memory(device, &memory); rc != nvml::k_success)
        return fail(ErrorCode::io_error, "NVML: GPU {}: memory: {}", index, api->describe(rc));
      s.memory_used_mib = memory.used / (1024 * 1024);
      if (nvml::Utilization u{};
          api->get_utilization && api->get_utilization(device, &u) == nvml::k_success) {
        s.utilization_pct = u.gpu;
        s.memory_utilization_pct = u.memory;
      }
      if (unsigned t = 0;
          api->get_temperature &&
          api->get_temperature(device, nvml::k_temperature_gpu, &t) == nvml::k_success)
        s.temperature_c = t;
      if (unsigned mw = 0; api->get_power && api->get_power(device, &mw) == nvml::k_success)
        s.power_w = mw / 1000.0;
      auto now = std::chrono::steady_clock::now();
      auto last = energy_read.find(index);
      if (unsigned long long mj = 0;
          api->get_energy &&
          (last == energy_read.end() || now - last->second >= k_energy_interval) &&
          api->get_energy(device, &mj) == nvml::k_success) {
        s.energy_mj = mj;
        energy_read[index] = now;
      }
      if (unsigned mhz = 0;
          api->get_clock && api->get_clock(device, nvml::k_clock_sm, &mhz) == nvml::k_success)
        s.sm_clock_mhz = mhz;
      if (unsigned mhz = 0;
          api->get_clock && api->get_clock(device, nvml::k_clock_mem, &mhz) == nvml::k_success)
        s.memory_clock_mhz = mhz;
      if (unsigned long long bits = 0;
          api->get_clock_reasons && api->get_clock_reasons(device, &bits) == nvml::k_success)
        s.throttle_reasons = clock_event_reason_names(bits);
      s.processes = read_nvml_processes(*api, device);
      samples.push_back(std::move(s));
    }
    return samples;
  }
};

class NvmlSampler : public GpuSampler {
 public:
  explicit NvmlSampler(std::string library) : library_(std::move(library)) {}

  Result<std::vector<GpuSample>> sample(const std::vector<int>& indices,
                                        std::chrono::milliseconds deadline) override {
    if (!session_) {
      KILN_TRY(auto api, load_nvml(library_));
      session_ = std::make_shared<NvmlSession>();
      session_->api = std::move(api);
    }
    return worker_.call<std::vector<GpuSample>>(
        [session = session_, indices] { return session->sample(indices); }, deadline,
        "NVML telemetry");
  }

 private:
  std::string library_;
  std::shared_ptr<NvmlSession> session_;
  DeadlineWorker worker_;  // destroyed first: joins its idle thread
};

}  // namespace

std::unique_ptr<GpuSampler> make_nvml_sampler(const std::string& library) {
  return std::make_unique<NvmlSampler>(library);
}

}  // namespace kiln::gpu
