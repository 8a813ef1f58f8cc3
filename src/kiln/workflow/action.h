#pragma once
// action.yml / action.yaml → Action: the metadata of a local or mirrored action (composite,
// JavaScript or Docker), with every problem reported as a Diagnostic at FILE:LINE:COL, like the
// workflow loader (loader.h).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/workflow/diagnostic.h"
#include "kiln/workflow/model.h"

namespace kiln::workflow {

struct ActionInput {
  std::string name;  // as written; GitHub compares input names case-insensitively
  bool required = false;
  std::optional<Text> default_value;  // may hold expressions (`${{ github.token }}`)
  std::string deprecation_message;    // empty: not deprecated
  SourceLocation where;
};

struct ActionOutput {
  std::string name;
  std::optional<Text> value;  // composite actions map outputs from their steps' outputs
  SourceLocation where;
};

enum class ActionKind { composite, node, docker };

struct Action {
  std::filesystem::path path;  // the action.yml, as given to the loader (used in diagnostics)
  std::string name;
  std::vector<ActionInput> inputs;
  std::vector<ActionOutput> outputs;
  ActionKind kind = ActionKind::composite;
  Text using_;              // runs.using as written: composite, node16, node20, node24, docker
  std::vector<Step> steps;  // composite
  // JavaScript: files relative to the action's directory, and the conditions of pre and post
  // (GitHub's default for both is always()).
  std::optional<Text> main, pre, post, pre_if, post_if;
  std::optional<Text> image;  // docker

  // The input named `name`, ignoring case as GitHub does.
  const ActionInput* find_input(std::string_view name) const;
};

struct ActionLoadResult {
  std::optional<Action> action;  // absent when the file has errors
  Diagnostics diagnostics;
};

ActionLoadResult load_action_text(std::string_view yaml, const std::filesystem::path& display_path);
ActionLoadResult load_action_file(const std::filesystem::path& path,
                                  const std::filesystem::path& display_path);

// The metadata file of an action directory: action.yml, else action.yaml; nullopt when neither
// exists.
std::optional<std::filesystem::path> find_action_file(const std::filesystem::path& directory);

// INPUT_<NAME>: the name upper-cased with spaces replaced by '_', as the actions toolkit reads it.
std::string input_variable(std::string_view name);

}  // namespace kiln::workflow
