// The slurm: section of kiln.yml (slurm_config.h, docs/configuration.md#slurm).

#include "kiln/config/slurm_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

Result<std::string> SlurmPool::gres_of(const gpu::GpuRequest& request) const {
  if (request.all)
    return make_error(ErrorCode::invalid_input,
                      "gpu:all cannot be submitted to Slurm: a node's GPU count is Slurm's; ask "
                      "for gpu:N");
  if (request.count <= 0) return std::string();
  if (request.model.empty()) return fmt::format("gpu:{}", request.count);
  auto it = gres_types.find(request.model);
  if (it == gres_types.end())
    return make_error(ErrorCode::invalid_input,
                      fmt::format("gpu-model:{} has no GRES type in kiln.yml's Slurm pool "
                                  "(slurm.pools[].gpu-model, {}:{})",
                                  request.model, where.file, where.line));
  return fmt::format("gpu:{}:{}", it->second, request.count);
}

namespace {

// The node features a request needs, as groups of which a node must have one feature each (a
// gpu-mem:N is met by every mapped amount of at least N); or the label the pool does not map.
Result<std::vector<std::vector<std::string>>> feature_groups(const SlurmPool& pool,
                                                             const gpu::GpuRequest& request) {
  std::vector<std::vector<std::string>> groups;
  const auto unmapped = [&](const std::string& label) {
    return make_error(ErrorCode::invalid_input,
                      fmt::format("{} has no Slurm node feature in kiln.yml's Slurm pool "
                                  "(slurm.pools[].features, {}:{}; \"\" when every node has it)",
                                  label, pool.where.file, pool.where.line));
  };
  for (const auto& [wanted, label] : {std::pair{&gpu::GpuRequest::vendor, "gpu-vendor"},
                                      std::pair{&gpu::GpuRequest::arch, "gpu-arch"}}) {
    const std::string& value = request.*wanted;
    if (value.empty()) continue;
    const SlurmFeature* found = nullptr;
    for (const auto& feature : pool.features)
      if (feature.means.*wanted == value) found = &feature;
    if (!found) return unmapped(fmt::format("{}:{}", label, value));
    if (!found->feature.empty()) groups.push_back({found->feature});
  }
  if (request.min_free_mib > 0) {
    std::vector<std::string> any;
    bool everywhere = false;
    for (const auto& feature : pool.features) {
      if (feature.means.min_free_mib < request.min_free_mib) continue;
      if (feature.feature.empty()) everywhere = true;
      any.push_back(feature.feature);
    }
    if (any.empty()) return unmapped(fmt::format("gpu-mem:{}G", request.min_free_mib / 1024));
    if (!everywhere) groups.push_back(std::move(any));
  }
  return groups;
}

}  // namespace

Result<std::string> SlurmPool::constraint_of(const gpu::GpuRequest& request) const {
  KILN_TRY(auto groups, feature_groups(*this, request));
  std::vector<std::string> terms;
  for (const auto& group : groups)
    terms.push_back(group.size() == 1 ? group.front() : fmt::format("({})", fmt::join(group, "|")));
  return fmt::format("{}", fmt::join(terms, "&"));
}

std::optional<std::string> SlurmPool::never_placed(const gpu::GpuRequest& request) const {
  if (nodes.empty()) return std::nullopt;
  auto gres = gres_of(request);
  if (!gres) return gres.error().message;
  auto groups = feature_groups(*this, request);
  if (!groups) return groups.error().message;
  // gpu:N of any type: every GPU of the node counts.
  const std::string type = request.model.empty() ? std::string() : gres_types.at(request.model);
  std::vector<std::string> kinds;
  for (const auto& node : nodes) {
    int has = 0;
    for (const auto& [node_type, count] : node.gpus)
      if (type.empty() || node_type == type) has += count;
    bool features = true;
    for (const auto& group : *groups)
      features =
          features && std::any_of(group.begin(), group.end(), [&](const std::string& f) {
            return std::find(node.features.begin(), node.features.end(), f) != node.features.end();
          });
    if (has >= request.count && features) return std::nullopt;
    kinds.push_back(node.features.empty()
                        ? node.gres
                        : fmt::format("{} [{}]", node.gres, fmt::join(node.features, ",")));
  }
  auto constraint = constraint_of(request);
  std::string wanted = gres->empty() ? "no GPU" : *gres;
  if (constraint && !constraint->empty()) wanted += " with features " + *constraint;
  return fmt::format("no node of kiln.yml's Slurm pool ({}:{}{}) has {}: its nodes have {}",
                     where.file, where.line, partition.empty() ? "" : ", partition " + partition,
                     wanted, fmt::join(kinds, "; "));
}

namespace detail {
namespace {

// "gpu:h100:8(S:0-1),gpu:a100:4,shard:8" -> the counts of GRES gpu by type; an error names the
// item that is not NAME[:TYPE][:COUNT].
Result<std::map<std::string, int>> parse_node_gres(const std::string& text) {
  std::string plain;  // without the socket bindings "(S:0-1)"
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (depth == 0) plain += c;
    if (c == ')' && depth > 0) --depth;
  }
  std::map<std::string, int> gpus;
  std::istringstream items(plain);
  for (std::string item; std::getline(items, item, ',');) {
    std::vector<std::string> parts;
    std::istringstream fields(item);
    for (std::string field; std::getline(fields, field, ':');) parts.push_back(field);
    auto number = [](const std::string& t, int& out) {
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
      return ec == std::errc() && end == t.data() + t.size() && out >= 0;
    };
    int count = 1;
    std::string type;
    bool ok = !parts.empty() && parts.size() <= 3 && !parts[0].empty();
    if (ok && parts.size() == 2 && !number(parts[1], count)) type = parts[1], count = 1;
    if (ok && parts.size() == 3) {
      type = parts[1];
      ok = !type.empty() && number(parts[2], count);
    }
    if (!ok)
      return make_error(ErrorCode::invalid_input,
                        fmt::format("'{}' is not a GRES (NAME[:TYPE][:COUNT], as sinfo -o %G "
                                    "prints it: gpu:h100:8)",
                                    item));
    if (parts[0] == "gpu") gpus[type] += count;
  }
  return gpus;
}

// features: {gpu-arch:sm_90: hopper, ...}: each key one GPU label of a vendor, an arch or an amount
// of memory.
Result<std::vector<SlurmFeature>> read_features(const Reader& reader, const YAML::Node& node,
                                                const std::string& path) {
  std::vector<SlurmFeature> features;
  if (!node || node.IsNull()) return features;
  if (!node.IsMap())
    return reader.error(node,
                        "{}: expected a mapping of GPU labels to node features "
                        "(gpu-arch:sm_90: hopper)",
                        path);
  for (const auto& entry : node) {
    SlurmFeature feature;
    KILN_TRY(feature.label, reader.scalar(entry.first, path));
    KILN_TRY(feature.feature, reader.scalar(entry.second, path + "." + feature.label));
    if (feature.feature.find_first_of(" \t\n,&|()[]*") != std::string::npos)
      return reader.error(entry.second, "{}.{}: '{}' is not a Slurm node feature", path,
                          feature.label, feature.feature);
    auto means = gpu::parse_gpu_request(std::vector<std::string>{feature.label});
    // One qualifier alone (the parser counts it as one GPU of that kind).
    int qualifiers = 0;
    if (means)
      qualifiers = int(!means->vendor.empty()) + int(!means->arch.empty()) +
                   int(means->min_free_mib > 0) + int(!means->model.empty()) +
                   int(means->memory_budget_mib > 0) + int(means->all);
    if (!means || qualifiers != 1 || !means->model.empty() || means->memory_budget_mib > 0 ||
        means->all || feature.label.starts_with("gpu:"))
      return reader.error(entry.first,
                          "{}: '{}' is not one gpu-vendor:, gpu-arch: or gpu-mem: label", path,
                          feature.label);
    feature.means = *means;
    features.push_back(std::move(feature));
  }
  return features;
}

Result<std::vector<SlurmNodeKind>> read_nodes(const Reader& reader, const YAML::Node& node,
                                              const std::string& path) {
  std::vector<SlurmNodeKind> kinds;
  if (!node || node.IsNull()) return kinds;
  if (!node.IsSequence() || node.size() == 0)
    return reader.error(node, "{}: expected a list of kinds of node (- gres: gpu:h100:8)", path);
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", path, i);
    const YAML::Node& entry = node[i];
    if (!entry.IsMap()) return reader.error(entry, "{}: expected a mapping (gres: ...)", at);
    KILN_TRY_VOID(reader.mapping(entry, at, {"gres", "features"}));
    if (!entry["gres"] || entry["gres"].IsNull())
      return reader.error(entry, "{}.gres: required: the node's GRES, as sinfo -o %G prints it",
                          at);
    SlurmNodeKind kind;
    kind.where = reader.where(entry["gres"]);
    KILN_TRY(kind.gres, reader.scalar(entry["gres"], at + ".gres"));
    auto gpus = parse_node_gres(kind.gres);
    if (!gpus) return reader.error(entry["gres"], "{}.gres: {}", at, gpus.error().message);
    kind.gpus = std::move(*gpus);
    KILN_TRY(kind.features, read_words(reader, entry["features"], at + ".features"));
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

Result<SlurmPool> read_pool(const Reader& reader, const YAML::Node& node, const std::string& path) {
  if (!node.IsMap()) return reader.error(node, "{}: expected a mapping", path);
  KILN_TRY_VOID(reader.mapping(node, path,
                               {"labels", "partition", "account", "qos", "exclusive", "gpu-model",
                                "sbatch_args", "features", "nodes"}));
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
  KILN_TRY(pool.features, read_features(reader, node["features"], path + ".features"));
  if (!pool.features.empty())
    for (std::size_t i = 0; i < pool.sbatch_args.size(); ++i)
      if (pool.sbatch_args[i].starts_with("--constraint") || pool.sbatch_args[i].starts_with("-C"))
        return reader.error(node["sbatch_args"][i],
                            "{}.sbatch_args: '{}' next to features: the constraint is made from "
                            "the job's labels; name the feature there",
                            path, pool.sbatch_args[i]);
  KILN_TRY(pool.nodes, read_nodes(reader, node["nodes"], path + ".nodes"));
  return pool;
}

}  // namespace

Status read_slurm(const Reader& reader, const YAML::Node& node, std::optional<SlurmConfig>& slurm) {
  if (!node || node.IsNull()) return {};
  KILN_TRY_VOID(
      reader.mapping(node, "slurm", {"spool", "agent", "bin_dir", "simulate_gpus", "pools"}));
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
  if (auto value = node["simulate_gpus"]; value && !value.IsNull()) {
    KILN_TRY(auto text, reader.scalar(value, "slurm.simulate_gpus"));
    if (text.empty()) return reader.error(value, "slurm.simulate_gpus: must not be empty");
    config.simulate_gpus = resolve(reader, text).string();
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
