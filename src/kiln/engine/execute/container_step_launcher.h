#pragma once
// The StepLauncher of a container job (container_job.h): each step's command runs in the job
// container, through the step helper serving there when there is one (`kiln-step-helper run
// SOCKET DIR -- ARGV`), else with `podman exec`.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "kiln/container/engine.h"
#include "kiln/exec/step_launcher.h"

namespace kiln::engine {

std::unique_ptr<exec::StepLauncher> make_container_step_launcher(
    const container::EngineCli& cli, std::string container,
    std::optional<std::filesystem::path> helper, std::filesystem::path socket);

}  // namespace kiln::engine
