#pragma once
// Helpers shared by the subcommands.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"
#include "kiln/engine/engine.h"
#include "kiln/store/store.h"

namespace kiln::cli {

// Prints an error as one line on stderr ("kiln: FILE:LINE:COL: error: ...") and returns the
// exit code for it (2 for bad input, 3 for internal errors).
int report_error(const Error& error);

// The store of the repository at `directory`: --store, else <git top level>/.kiln/kiln.db
// (else <directory>/.kiln/kiln.db outside a git repository).
std::filesystem::path default_store_path(const std::filesystem::path& directory);
Result<std::unique_ptr<store::Store>> open_store(const std::optional<std::filesystem::path>& path,
                                                 const std::filesystem::path& directory);

// The host configuration (--config FILE, else $KILN_CONFIG, else /etc/kiln/kiln.yml, else the
// defaults; config/host_config.h) applied to the options: custom GPU labels, GPU health, the
// host store.
Status apply_host_config(const std::string& config_flag, engine::RunOptions& options);

// jobs.limits (core/cgroup.h) into `options`, once this host is seen to give jobs cgroups: else
// an error at the limits' place in kiln.yml. `kiln run` and `kiln serve` call it.
Status apply_job_limits(const config::HostConfig& config, engine::RunOptions& options);

// --label NAME (a runner label this host serves, asking for nothing) and --label NAME=REQUEST (a
// custom GPU label, as kiln.yml's gpus.labels: `--label 'gpu-a100=gpu gpu-model:a100'`), added
// to the host config's labels.
Status apply_label_flags(const std::vector<std::string>& flags, engine::RunOptions& options);

// Reads a dotenv file (core/dotenv.h). Errors name FILE:LINE:COL.
Result<std::map<std::string, std::string>> read_dotenv(const std::filesystem::path& path);

// "K=V" → (K, V); errors name the option.
Result<std::pair<std::string, std::string>> split_assignment(const std::string& text,
                                                             const std::string& option);

// --actions-mirror DIR, else $KILN_ACTIONS_MIRROR, else none. A directory that does not exist is
// bad input.
Result<std::optional<std::filesystem::path>> actions_mirror(const std::string& option);

bool stdout_is_terminal();
bool stderr_is_terminal();

}  // namespace kiln::cli
