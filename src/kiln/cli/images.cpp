// kiln images [-C DIR] [-W FILE|DIR] [--pull] [--json] [--container-engine E] [--config F]
// The container images the repository's workflows name (job containers, services, `uses:
// docker://` steps; container/images.h), each with what its tag resolves to on this host (the
// digest and image id, or "not present"); --pull fetches every one ahead of the first job and
// says which tags moved. An image written with an expression that only a run can evaluate is
// reported as FILE:LINE:COL: warning, never skipped silently (docs/containers.md).
// Exit codes: 0; 1 when a pull failed; 2 for an invalid workflow or bad arguments.
#include <map>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kiln/cli/app.h"
#include "kiln/cli/common.h"
#include "kiln/container/engine.h"
#include "kiln/container/images.h"
#include "kiln/workflow/loader.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct ImagesArgs {
  std::string directory = ".";
  std::string workflows;
  bool pull = false;
  bool json = false;
  std::string container_engine;
  std::string config;
};

struct Listed {
  std::vector<container::ImageUse> uses;
  container::HostImage host;
};

nlohmann::json location_json(const SourceLocation& where) {
  return {{"file", where.file}, {"line", where.line}, {"column", where.column}};
}

int images(const ImagesArgs& args) {
  std::error_code ec;
  if (!fs::is_directory(args.directory, ec))
    return report_error(Error{
        ErrorCode::invalid_input, fmt::format("-C {}: no such directory", args.directory), {}});
  fs::path repository = args.directory;
  fs::path target =
      args.workflows.empty() ? repository / ".github" / "workflows" : fs::path(args.workflows);
  auto files = workflow::discover_workflows(target);
  if (!files) return report_error(files.error());
  if (files->empty())
    return report_error(Error{
        ErrorCode::invalid_input,
        fmt::format("{}: no workflow files (.github/workflows/*.yml or *.yaml)", target.string()),
        {}});

  engine::RunOptions options;
  if (auto applied = apply_host_config(args.config, options); !applied)
    return report_error(applied.error());
  std::string preference = options.container_engine;
  if (!args.container_engine.empty()) {
    preference = args.container_engine;
  } else if (const char* engine = std::getenv("KILN_CONTAINER_ENGINE"); engine && *engine) {
    preference = engine;
  }

  int errors = 0;
  std::vector<std::string> order;  // images in the order the files first name them
  std::map<std::string, Listed> listed;
  std::vector<container::UnresolvedImage> unresolved;
  for (const auto& file : *files) {
    fs::path shown = fs::relative(file, repository, ec);
    if (ec || shown.empty() || shown.native().starts_with("..")) shown = file;
    auto loaded = workflow::load_workflow_file(file, shown);
    for (const auto& diagnostic : loaded.diagnostics) {
      if (diagnostic.severity != workflow::Severity::error) continue;
      fmt::print(stderr, "{}\n", diagnostic.to_string());
      ++errors;
    }
    if (!loaded.workflow) continue;
    auto found = container::collect_images(*loaded.workflow);
    for (auto& use : found.uses) {
      auto [it, added] = listed.try_emplace(use.image);
      if (added) order.push_back(use.image);
      it->second.uses.push_back(std::move(use));
    }
    unresolved.insert(unresolved.end(), found.unresolved.begin(), found.unresolved.end());
  }
  // A workflow that does not load names images nobody can trust: say so, list nothing.
  if (errors > 0) return 2;
  for (const auto& item : unresolved)
    fmt::print(stderr, "{}: warning: job {} ({}): image '{}' is not listed: {}\n",
               item.where.to_string(), item.job, item.role, item.text, item.reason);

  bool pull_failed = false;
  if (!order.empty()) {
    const char* path = std::getenv("PATH");
    auto engine = container::detect_engine(preference, path ? path : "");
    if (!engine) return report_error(engine.error());
    container::EngineCli cli(*engine);
    for (const auto& image : order) {
      if (args.pull && !args.json) fmt::print(stderr, "pulling {}\n", image);
      listed[image].host = container::look_up_image(cli, image, args.pull);
      pull_failed = pull_failed || !listed[image].host.error.empty();
    }
  }

  if (args.json) {
    nlohmann::json out = {{"images", nlohmann::json::array()},
                          {"unresolved", nlohmann::json::array()}};
    for (const auto& image : order) {
      const auto& item = listed[image];
      nlohmann::json uses = nlohmann::json::array();
      for (const auto& use : item.uses) {
        auto row = location_json(use.where);
        row["job"] = use.job;
        row["role"] = use.role;
        uses.push_back(row);
      }
      const auto& host = item.host;
      out["images"].push_back(
          {{"image", image},
           {"present", host.present},
           {"id", host.id.empty() ? nlohmann::json(nullptr) : nlohmann::json(host.id)},
           {"digest", host.digest.empty() ? nlohmann::json(nullptr) : nlohmann::json(host.digest)},
           {"pulled", host.pulled},
           {"moved_from", host.moved_from ? nlohmann::json(*host.moved_from) : nlohmann::json()},
           {"error", host.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(host.error)},
           {"uses", uses}});
    }
    for (const auto& item : unresolved) {
      auto row = location_json(item.where);
      row["job"] = item.job;
      row["role"] = item.role;
      row["text"] = item.text;
      row["reason"] = item.reason;
      out["unresolved"].push_back(row);
    }
    fmt::print("{}\n", out.dump(2));
    return pull_failed ? 1 : 0;
  }

  std::vector<std::array<std::string, 3>> rows = {{"IMAGE", "ON THIS HOST", "NAMED AT"}};
  for (const auto& image : order) {
    const auto& item = listed[image];
    const auto& host = item.host;
    std::string state;
    if (!host.error.empty())
      state = "pull failed: " + host.error;
    else if (!host.present)
      state = "not present";
    else
      state = host.digest.empty() ? host.id : host.digest;
    if (host.pulled)
      state += host.moved_from ? " (pulled; the tag moved from " + *host.moved_from + ")"
                               : " (pulled; unchanged)";
    const auto& first = item.uses.front();
    std::string named =
        fmt::format("{} job {} ({})", first.where.to_string(), first.job, first.role);
    if (item.uses.size() > 1) named += fmt::format(" and {} more", item.uses.size() - 1);
    rows.push_back({image, state, named});
  }
  std::size_t width0 = 0, width1 = 0;
  for (const auto& row : rows) {
    width0 = std::max(width0, row[0].size());
    width1 = std::max(width1, row[1].size());
  }
  for (const auto& row : rows)
    fmt::print("{:<{}}  {:<{}}  {}\n", row[0], width0, row[1], width1, row[2]);
  std::size_t present = 0;
  for (const auto& image : order) present += listed[image].host.present ? 1 : 0;
  fmt::print("{} image{}, {} on this host, {} not resolvable before a run\n", order.size(),
             order.size() == 1 ? "" : "s", present, unresolved.size());
  return pull_failed ? 1 : 0;
}

}  // namespace

void add_images_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ImagesArgs>();
  auto* cmd = app.add_subcommand(
      "images", "the container images the workflows name, as this host resolves them");
  cmd->add_option("-C,--directory", args->directory, "the repository (default: .)");
  cmd->add_option("-W,--workflows", args->workflows, "a workflow file or a directory of them");
  cmd->add_flag("--pull", args->pull, "pull every image now (tags that moved are fetched again)");
  cmd->add_flag("--json", args->json, "print JSON (docs/containers.md)");
  cmd->add_option("--container-engine", args->container_engine,
                  "podman, docker, auto or a path (default: $KILN_CONTAINER_ENGINE, else "
                  "kiln.yml's containers.engine, else auto)");
  cmd->add_option("--config", args->config,
                  "host configuration (default: $KILN_CONFIG, else /etc/kiln/kiln.yml)");
  cmd->callback([args, &exit_code] { exit_code = images(*args); });
}

}  // namespace kiln::cli
