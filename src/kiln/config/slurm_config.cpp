// The slurm: section of kiln.yml (slurm_config.h, docs/configuration.md#slurm).

#include "kiln/config/slurm_config.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "kiln/config/reader.h"

namespace kiln::config {

bool SlurmPool::matches(const std::vector<std::string>& job_labels) const {
  for (const auto& wanted : labels) {
    bool found = false;
    for (const auto& label : job_labels)
      if (label == wanted || label.starts_with(wanted + ":")) found = true;
    if (!found) return false;
  }
  return true;
}

const SlurmPool* SlurmConfig::pool_for(const std::vector<std::string>& job_labels) const {
  for (const auto& pool : pools)
    if (pool.matches(job_labels)) return &pool;
  return nullptr;
}

namespace detail {
namespace {

Result<SlurmPool> read_pool(const Reader& reader, const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) return reader.error(node, "{}: expected a mapping", path);
  KILN_TRY_VOID(reader.mapping(
      node, path,
      {"labels", "partition", "account", "qos", "exclusive", "gpu-model", "sbatch_args"}));
  SlurmPool pool;
  pool.where = reader.where(node);
  KILN_TRY(pool.labels, read_words(reader, node["labels"], path + ".labels"));
  if (pool.labels.empty())
    return reader.error(node["labels"] ? node["labels"] : node,
                        "{}.labels: a pool needs at least one runs-on label", path);
  for (const auto& [key, field] :
       {std::pair{"partition", &pool.partition}, {"account", &pool.account}, {"qos", &pool.qos}}) {
    if (auto value = node[key]; value && !value.IsNull()) {
      KILN_TRY(*field, reader.scalar(value, path + "." + key));
      if (field->empty() || field->find_first_of(" \t\n,") != std::string::npos)
        return reader.error(value, "{}.{}: '{}' is not a Slurm {} name", path, key, *field, key);
    }
  }
  if (auto value = node["exclusive"]; value && !value.IsNull()) {
    KILN_TRY(auto text, reader.scalar(value, path + ".exclusive"));
    if (text != "true" && text != "false")
      return reader.error(value, "{}.exclusive: expected true or false, got '{}'", path, text);
    pool.exclusive = text == "true";
  }
  if (auto models = node["gpu-model"]; models && !models.IsNull()) {
    if (!models.IsMap())
      return reader.error(models,
                          "{}.gpu-model: expected a mapping of gpu-model values to GRES "
                          "types (h100: h100)",
                          path);
    for (const auto& entry : models) {
      KILN_TRY(auto model, reader.scalar(entry.first, path + ".gpu-model"));
      KILN_TRY(auto type, reader.scalar(entry.second, path + ".gpu-model." + model));
      if (type.empty() || type.find_first_of(" \t\n,:") != std::string::npos)
        return reader.error(entry.second, "{}.gpu-model.{}: '{}' is not a GRES type", path, model,
                            type);
      // Requests hold gpu-model values lowercased (gpu/request.h).
      std::transform(model.begin(), model.end(), model.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      pool.gres_types[model] = type;
    }
  }
  KILN_TRY(pool.sbatch_args, read_words(reader, node["sbatch_args"], path + ".sbatch_args"));
  for (std::size_t i = 0; i < pool.sbatch_args.size(); ++i)
    if (!pool.sbatch_args[i].starts_with("-"))
      return reader.error(node["sbatch_args"][i],
                          "{}.sbatch_args: '{}' is not an option (one option per entry, "
                          "--name=value)",
                          path, pool.sbatch_args[i]);
  return pool;
}

}  // namespace

Status read_slurm(const Reader& reader, const YAML::Node& node, std::optional<SlurmConfig>& slurm) {
  if (!node || node.IsNull()) return {};
  KILN_TRY_VOID(reader.mapping(node, "slurm", {"spool", "agent", "bin_dir", "pools"}));
  SlurmConfig config;
  auto spool = node["spool"];
  if (!spool || spool.IsNull())
    return reader.error(node, "slurm.spool: required: a directory the server and the nodes see");
  KILN_TRY(auto spool_text, reader.scalar(spool, "slurm.spool"));
  if (spool_text.empty()) return reader.error(spool, "slurm.spool: must not be empty");
  config.spool = resolve(reader, spool_text);
  for (const auto& [key, field] :
       {std::pair{"agent", &config.agent}, std::pair{"bin_dir", &config.bin_dir}}) {
    if (auto value = node[key]; value && !value.IsNull()) {
      KILN_TRY(auto text, reader.scalar(value, std::string("slurm.") + key));
      if (text.empty()) return reader.error(value, "slurm.{}: must not be empty", key);
      *field = resolve(reader, text);
    }
  }
  auto pools = node["pools"];
  if (!pools || pools.IsNull() || !pools.IsSequence() || pools.size() == 0)
    return reader.error(pools ? pools : node,
                        "slurm.pools: expected a list of pools (labels: [gpu], partition: ...)");
  for (std::size_t i = 0; i < pools.size(); ++i) {
    KILN_TRY(auto pool, read_pool(reader, pools[i], fmt::format("slurm.pools[{}]", i)));
    config.pools.push_back(std::move(pool));
  }
  slurm = std::move(config);
  return {};
}

}  // namespace detail
}  // namespace kiln::config
