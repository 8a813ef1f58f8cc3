#pragma once
// What a job's container options mean on this host, where the engine alone would get them wrong:
//   --group-add video|render   the host's group id (the GPU device nodes keep the host's group,
//                              and the image may not know the name: podman and docker then
//                              refuse to start); left out, with a note, when the host has no such
//                              group (no device of the job belongs to it)
//   --ulimit NAME=SOFT:HARD    above the host's hard limit while Kiln cannot raise limits (no
//                              CAP_SYS_RESOURCE: the engine's runtime could not either, and the
//                              container would not start): the host's limits, with a warning
// Every change is said: the returned lines go to the job's log.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/container/gpu_flags.h"

namespace kiln::container {

struct HostFacts {
  GroupIds groups;
  bool can_raise_limits = true;  // CAP_SYS_RESOURCE in Kiln's effective set
  // getrlimit resource → {soft, hard}; RLIM_INFINITY as UINT64_MAX. Resources absent: unknown.
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> limits;
};

// This host: /etc/group, /proc/self/status's CapEff, getrlimit.
HostFacts this_host();

struct HostAdaptation {
  std::vector<std::string> notes;     // "kiln" lines
  std::vector<std::string> warnings;  // "warning" lines
};

HostAdaptation adapt_to_host(std::vector<std::string>& args, const HostFacts& host);

}  // namespace kiln::container
