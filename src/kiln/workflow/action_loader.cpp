// action.yml: name, description, author, branding, inputs, outputs and runs.
#include <algorithm>
#include <fstream>
#include <iterator>

#include <yaml-cpp/yaml.h>

#include "kiln/workflow/action.h"
#include "kiln/workflow/sections.h"

namespace kiln::workflow {

namespace {

using detail::Entry;
using detail::Reader;

constexpr std::string_view k_action_keys[] = {"name",   "description", "author", "branding",
                                              "inputs", "outputs",     "runs"};
constexpr std::string_view k_input_keys[] = {"description", "required", "default",
                                             "deprecationMessage"};
constexpr std::string_view k_output_keys[] = {"description", "value"};
constexpr std::string_view k_composite_keys[] = {"using", "steps"};
constexpr std::string_view k_node_keys[] = {"using", "main", "pre", "pre-if", "post", "post-if"};
constexpr std::string_view k_docker_keys[] = {"using",  "image",           "env",
                                              "args",   "entrypoint",      "pre-entrypoint",
                                              "pre-if", "post-entrypoint", "post-if"};
// Composite steps have no timeout-minutes (GitHub refuses it there).
constexpr std::string_view k_composite_step_keys[] = {"id",
                                                      "name",
                                                      "if",
                                                      "run",
                                                      "uses",
                                                      "with",
                                                      "env",
                                                      "shell",
                                                      "working-directory",
                                                      "continue-on-error"};
constexpr std::string_view k_node_versions[] = {"node12", "node16", "node20", "node24"};

void read_inputs(Reader& reader, const Entry& entry, Action& action) {
  auto items = reader.mapping(entry);
  if (!items) return;
  for (const Entry& item : *items) {
    ActionInput input{item.key, false, std::nullopt, {}, item.key_where};
    if (std::ranges::any_of(action.inputs, [&](const ActionInput& other) {
          return input_variable(other.name) == input_variable(item.key);
        }))
      reader.error(item.key_where,
                   fmt::format("duplicate input '{}' (input names ignore case)", item.key));
    if (!item.value.IsNull()) {
      auto fields = reader.mapping(item, k_input_keys, fmt::format("input '{}'", item.key));
      if (!fields) continue;
      for (const Entry& f : *fields) {
        auto text = reader.text(f);
        if (!text) continue;
        if (f.key == "required") {
          if (!detail::is_boolean(text->value))
            reader.error(text->where,
                         fmt::format("'required' must be true or false, not '{}'", text->value));
          input.required = text->value == "true" || text->value == "True";
        } else if (f.key == "default") {
          input.default_value = std::move(*text);
        } else if (f.key == "deprecationMessage") {
          input.deprecation_message = text->value;
        }
      }
    }
    action.inputs.push_back(std::move(input));
  }
}

void read_outputs(Reader& reader, const Entry& entry, Action& action) {
  auto items = reader.mapping(entry);
  if (!items) return;
  for (const Entry& item : *items) {
    ActionOutput output{item.key, std::nullopt, item.key_where};
    if (!item.value.IsNull()) {
      auto fields = reader.mapping(item, k_output_keys, fmt::format("output '{}'", item.key));
      if (!fields) continue;
      for (const Entry& f : *fields)
        if (f.key == "value") output.value = reader.text(f);
    }
    action.outputs.push_back(std::move(output));
  }
}

void read_runs(Reader& reader, const Entry& entry, Action& action) {
  if (!entry.value.IsMap()) {
    reader.error(entry.value_where, fmt::format("'runs' must be a mapping, not {}",
                                                Reader::shape_name(Reader::shape(entry.value))));
    return;
  }
  // `using` decides which keys are allowed: read it first.
  std::optional<Text> using_;
  if (auto node = entry.value["using"]; node && node.IsScalar())
    using_ = reader.text(node, reader.at(node), "using");
  if (!using_) {
    reader.error(entry.value_where,
                 "'runs' needs 'using' (composite, node16, node20, node24 or docker)");
    return;
  }
  action.using_ = *using_;
  const std::string& kind = using_->value;
  std::span<const std::string_view> keys;
  if (kind == "composite") {
    action.kind = ActionKind::composite;
    keys = k_composite_keys;
  } else if (std::ranges::find(k_node_versions, kind) != std::end(k_node_versions)) {
    action.kind = ActionKind::node;
    keys = k_node_keys;
  } else if (kind == "docker") {
    action.kind = ActionKind::docker;
    keys = k_docker_keys;
  } else {
    reader.error(using_->where,
                 fmt::format("unknown 'runs.using' value '{}' (composite, node16, node20, node24 "
                             "or docker)",
                             kind));
    return;
  }
  auto entries = reader.mapping(entry, keys, "'runs'");
  if (!entries) return;
  bool has_steps = false;
  for (const Entry& e : *entries) {
    if (e.key == "using") continue;
    if (e.key == "steps") {
      has_steps = true;
      action.steps = detail::read_steps(reader, e, "composite action", k_composite_step_keys);
      continue;
    }
    auto text = reader.text(e);
    if (!text) continue;
    if (e.key == "main")
      action.main = std::move(text);
    else if (e.key == "pre")
      action.pre = std::move(text);
    else if (e.key == "post")
      action.post = std::move(text);
    else if (e.key == "pre-if")
      action.pre_if = std::move(text);
    else if (e.key == "post-if")
      action.post_if = std::move(text);
    else if (e.key == "image")
      action.image = std::move(text);
  }
  if (action.kind == ActionKind::composite) {
    if (!has_steps) reader.error(entry.value_where, "a composite action needs 'runs.steps'");
    // GitHub requires a shell on every `run` step of a composite action.
    for (const Step& step : action.steps)
      if (step.run && !step.shell)
        reader.error(step.where, "a 'run' step of a composite action needs a 'shell'");
  }
  if (action.kind == ActionKind::node && !action.main)
    reader.error(entry.value_where, fmt::format("a {} action needs 'runs.main'", kind));
  if (action.kind == ActionKind::docker && !action.image)
    reader.error(entry.value_where, "a docker action needs 'runs.image'");
}

Action read_action(Reader& reader, const YAML::Node& root, const std::filesystem::path& path) {
  Action action;
  action.path = path;
  SourceLocation start = reader.at(root);
  if (!root.IsMap()) {
    reader.error(start, root.IsNull() ? "action file is empty"
                                      : fmt::format("an action must be a mapping, not {}",
                                                    Reader::shape_name(Reader::shape(root))));
    return action;
  }
  auto entries = reader.mapping(root, start, "action", k_action_keys, "action");
  bool has_runs = false;
  for (const Entry& entry : *entries) {
    if (entry.key == "name") {
      if (auto text = reader.text(entry)) action.name = text->value;
    } else if (entry.key == "inputs") {
      read_inputs(reader, entry, action);
    } else if (entry.key == "outputs") {
      read_outputs(reader, entry, action);
    } else if (entry.key == "runs") {
      has_runs = true;
      read_runs(reader, entry, action);
    }
    // description, author and branding are for the marketplace.
  }
  if (!has_runs) reader.error(start, "action has no 'runs' (how it runs)");
  if (action.kind == ActionKind::composite)
    for (const ActionOutput& output : action.outputs)
      if (!output.value)
        reader.error(output.where,
                     fmt::format("output '{}' of a composite action needs a 'value'", output.name));
  return action;
}

}  // namespace

const ActionInput* Action::find_input(std::string_view name) const {
  std::string wanted = input_variable(name);
  auto it = std::ranges::find_if(
      inputs, [&](const ActionInput& input) { return input_variable(input.name) == wanted; });
  return it == inputs.end() ? nullptr : &*it;
}

std::string input_variable(std::string_view name) {
  std::string out;
  for (char c : name)
    out += c == ' ' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

ActionLoadResult load_action_text(std::string_view yaml,
                                  const std::filesystem::path& display_path) {
  Reader reader(yaml, display_path.string());
  reader.set_unknown_keys_are_warnings(true);
  ActionLoadResult result;
  Action action;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    action = read_action(reader, root, display_path);
  } catch (const YAML::Exception& e) {
    SourceLocation where = e.mark.is_null() ? SourceLocation{reader.file(), 0, 0}
                                            : reader.at(e.mark.line, e.mark.column);
    reader.error(std::move(where), fmt::format("invalid YAML: {}", e.msg));
  } catch (const std::exception& e) {
    reader.error(SourceLocation{reader.file(), 0, 0}, fmt::format("cannot load: {}", e.what()));
  }
  result.diagnostics = reader.take();
  if (!has_errors(result.diagnostics)) result.action = std::move(action);
  return result;
}

ActionLoadResult load_action_file(const std::filesystem::path& path,
                                  const std::filesystem::path& display_path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    ActionLoadResult result;
    result.diagnostics.push_back(
        Diagnostic{Severity::error, SourceLocation{display_path.string(), 0, 0},
                   fmt::format("cannot read action file '{}'", path.string())});
    return result;
  }
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return load_action_text(text, display_path);
}

std::optional<std::filesystem::path> find_action_file(const std::filesystem::path& directory) {
  std::error_code ec;
  for (const char* name : {"action.yml", "action.yaml"})
    if (std::filesystem::is_regular_file(directory / name, ec)) return directory / name;
  return std::nullopt;
}

}  // namespace kiln::workflow
