// Makespan of a batch of GPU jobs on the simulated 8-GPU host (tests/data/gpu/
// h100-8x-two-islands.json), in simulated time: every job is queued at time 0; whenever jobs end,
// one scheduling pass runs over the queue. Three schedulers:
//   kiln        QueuePass: FIFO, a reservation for the head, backfill of later jobs around it;
//   fifo        QueuePass but stopping at the first job that must wait (no backfill);
//   one-per-host one job at a time on the host, whatever its GPU count (GitHub's runner: one
//               runner process per host runs one job);
// against the lower bound: total GPU-time / 8 GPUs. Prints a Markdown table.
//
// Usage: gpu_makespan [JOBS [SEEDS]]   (default 200 jobs, seeds 1..5, for each of three mixes)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "kiln/gpu/allocator.h"
#include "kiln/gpu/simulated_provider.h"

namespace {

using namespace kiln::gpu;

struct Job {
  int gpus = 1;
  long seconds = 0;
};

struct Mix {
  const char* name;
  int weights[4];  // percent of gpu:1, gpu:2, gpu:4, gpu:8
};

constexpr Mix k_mixes[] = {
    {"mostly small (50/30/15/5)", {50, 30, 15, 5}},
    {"even (25/25/25/25)", {25, 25, 25, 25}},
    {"mostly large (10/20/30/40)", {10, 20, 30, 40}},
};

// Durations: log-normal around 20 minutes (a CI job), from 1 minute to 4 hours.
std::vector<Job> make_jobs(const Mix& mix, int count, unsigned seed) {
  std::mt19937 rng(seed);
  std::discrete_distribution<int> size(std::begin(mix.weights), std::end(mix.weights));
  std::lognormal_distribution<double> minutes(3.0, 0.8);
  std::vector<Job> jobs;
  for (int i = 0; i < count; ++i) {
    Job job;
    job.gpus = 1 << size(rng);
    job.seconds = std::clamp(static_cast<long>(minutes(rng) * 60), 60L, 4 * 3600L);
    jobs.push_back(job);
  }
  return jobs;
}

enum class Policy { backfill, strict_fifo, one_per_host };

// Event-driven: passes at time 0 and at every job end; the makespan is the last end.
long makespan(const Topology& topology, const std::vector<Job>& jobs, Policy policy) {
  struct Running {
    long ends;
    std::vector<int> gpus;
  };
  std::vector<std::size_t> queue(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) queue[i] = i;
  std::vector<Running> running;
  long now = 0, last_end = 0;
  while (!queue.empty() || !running.empty()) {
    std::erase_if(running, [&](const Running& r) { return r.ends <= now; });
    std::set<int> busy;
    for (const auto& r : running) busy.insert(r.gpus.begin(), r.gpus.end());
    if (policy == Policy::one_per_host && !running.empty()) {
      // The host runs nothing else until its one job ends.
    } else {
      QueuePass pass(topology, busy);
      std::vector<std::size_t> still;
      bool stopped = false;
      for (auto id : queue) {
        GpuRequest request;
        request.count = jobs[id].gpus;
        if (stopped) {
          still.push_back(id);
          continue;
        }
        auto decision = pass.place(request);
        if (decision.verdict == Verdict::granted) {
          running.push_back({now + jobs[id].seconds, decision.gpus});
          last_end = std::max(last_end, now + jobs[id].seconds);
          if (policy == Policy::one_per_host) stopped = true;
        } else {
          if (decision.verdict == Verdict::never) {
            std::fprintf(stderr, "job %zu can never run: %s\n", id, decision.reason.c_str());
            std::exit(1);
          }
          still.push_back(id);
          if (policy == Policy::strict_fifo) stopped = true;
        }
      }
      queue = std::move(still);
    }
    if (running.empty()) {
      if (!queue.empty()) {
        std::fprintf(stderr, "nothing runs and %zu jobs wait\n", queue.size());
        std::exit(1);
      }
      break;
    }
    now = std::min_element(running.begin(), running.end(), [](const auto& a, const auto& b) {
            return a.ends < b.ends;
          })->ends;
  }
  return last_end;
}

double hours(long seconds) { return static_cast<double>(seconds) / 3600.0; }

}  // namespace

int main(int argc, char** argv) {
  const int job_count = argc > 1 ? std::atoi(argv[1]) : 200;
  const int seeds = argc > 2 ? std::atoi(argv[2]) : 5;
  auto inventory = load_simulated_inventory(std::filesystem::path(KILN_SOURCE_DIR) /
                                            "tests/data/gpu/h100-8x-two-islands.json");
  if (!inventory) {
    std::fprintf(stderr, "%s\n", inventory.error().to_string().c_str());
    return 1;
  }
  Topology topology(*inventory);
  const auto gpus = static_cast<long>(inventory->gpus.size());

  std::printf("%d jobs per run, all queued at time 0, on %ld simulated GPUs; times in hours.\n\n",
              job_count, gpus);
  std::printf(
      "| mix | seed | lower bound | kiln | kiln / bound | fifo, no backfill | one job per host | "
      "one-per-host / kiln |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& mix : k_mixes) {
    double sum_ratio = 0, sum_speedup = 0, sum_fifo = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
      auto jobs = make_jobs(mix, job_count, static_cast<unsigned>(seed));
      long gpu_seconds = 0;
      for (const auto& job : jobs) gpu_seconds += job.gpus * job.seconds;
      const double bound = static_cast<double>(gpu_seconds) / static_cast<double>(gpus);
      const long kiln = makespan(topology, jobs, Policy::backfill);
      const long fifo = makespan(topology, jobs, Policy::strict_fifo);
      const long serial = makespan(topology, jobs, Policy::one_per_host);
      sum_ratio += static_cast<double>(kiln) / bound;
      sum_fifo += static_cast<double>(fifo) / bound;
      sum_speedup += static_cast<double>(serial) / static_cast<double>(kiln);
      std::printf("| %s | %d | %.1f | %.1f | %.3f | %.1f | %.1f | %.2f |\n", mix.name, seed,
                  bound / 3600.0, hours(kiln), static_cast<double>(kiln) / bound, hours(fifo),
                  hours(serial), static_cast<double>(serial) / static_cast<double>(kiln));
    }
    std::printf("| %s | mean | | | **%.3f** | (%.3f of bound) | | **%.2f** |\n", mix.name,
                sum_ratio / seeds, sum_fifo / seeds, sum_speedup / seeds);
  }
  return 0;
}
