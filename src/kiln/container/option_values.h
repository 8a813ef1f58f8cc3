#pragma once
// The values of container options, checked as the engines would check them (docker's sizes,
// ulimits, capabilities, security options, IPC modes), so that what podman or docker would refuse
// at `run` is refused when the workflow is loaded, at its `options:` line, with what to write.

#include <optional>
#include <string>
#include <string_view>

namespace kiln::container {

// Why `value` is not a valid value of the option `long_name` ("--shm-size", ...), or nullopt.
// Options without a check here take any value that is not empty and does not look like an option.
std::optional<std::string> value_problem(std::string_view long_name, std::string_view value);

// The getrlimit resource of a --ulimit name ("memlock", "nofile", ...), or -1.
int rlimit_resource(std::string_view name);

}  // namespace kiln::container
