#pragma once
// The typed model of a GitHub Actions workflow file, as loaded by loader.h. Every value that a
// diagnostic may need to point at keeps its source location. Values that may hold `${{ }}`
// expressions stay text here; the engine evaluates them when their contexts exist.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::workflow {

// An optional value kept on the heap, for the large sections most jobs do not have
// (container, strategy, concurrency, snapshot): an empty one is one pointer where a
// std::optional would hold the whole section. With 100,000 jobs a Job held 2.8 KB, most of it
// those sections, absent. It reads like std::optional and copies its value.
template <class T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}
  Boxed(T value) : value_(std::make_unique<T>(std::move(value))) {}
  Boxed(std::optional<T> value) {
    if (value) value_ = std::make_unique<T>(std::move(*value));
  }
  Boxed(const Boxed& other) : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;

  bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return value_.get(); }
  const T* operator->() const { return value_.get(); }
  void reset() { value_.reset(); }
  template <class... Args>
  T& emplace(Args&&... args) {
    value_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *value_;
  }
  operator std::optional<T>() const { return value_ ? std::optional<T>(*value_) : std::nullopt; }
  friend bool operator==(const Boxed& box, std::nullopt_t) { return !box.has_value(); }

 private:
  std::unique_ptr<T> value_;
};

// A scalar as written in the file, with where it was written.
struct Text {
  std::string value;
  SourceLocation where;
};

// Ordered key/value pairs (env, with, outputs): file order is kept, keys are unique. `env:` and
// `with:` may instead be one expression (`env: ${{ fromJSON(needs.setup.outputs.env) }}`),
// kept in `expression` with no entries: expand_mapping (expand.h) evaluates it where its
// contexts exist, and the engine reads the mapping it yields.
struct TextMap {
  using Pair = std::pair<std::string, Text>;
  std::vector<Pair> entries;
  std::optional<Text> expression;

  auto begin() const { return entries.begin(); }
  auto end() const { return entries.end(); }
  auto begin() { return entries.begin(); }
  auto end() { return entries.end(); }
  size_t size() const { return entries.size(); }
  bool empty() const { return entries.empty() && !expression; }
  const Pair& operator[](size_t i) const { return entries[i]; }
  template <class... Args>
  Pair& emplace_back(Args&&... args) {
    return entries.emplace_back(std::forward<Args>(args)...);
  }
};

// on.<event>: the filters of push / pull_request / pull_request_target.
// An absent list (nullopt) means "no filter of this kind".
struct EventFilter {
  std::optional<std::vector<Text>> branches, branches_ignore, tags, tags_ignore, paths,
      paths_ignore;
  std::vector<Text> types;  // pull_request activity types (opened, synchronize, ...)
  // image_version: the image names and versions that trigger it (patterns as for branches).
  std::optional<std::vector<Text>> names, versions;
};

// on.workflow_dispatch.inputs.<name> and on.workflow_call.inputs.<name>.
struct InputSpec {
  std::string name;
  std::string description;
  // string | boolean | number | choice | environment (workflow_call: string, boolean, number)
  std::string type = "string";
  bool required = false;
  std::optional<Text> default_value;
  std::vector<std::string> options;  // for choice
  SourceLocation where;
};

// on.workflow_call.secrets.<name>.
struct SecretSpec {
  std::string name;
  bool required = false;
  SourceLocation where;
};

// on.workflow_call.outputs.<name>: `value` is evaluated with the `jobs` context of the called
// workflow once its jobs are done.
struct OutputSpec {
  std::string name;
  Text value;
  SourceLocation where;
};

struct Trigger {
  std::string event;  // push, pull_request, pull_request_target, workflow_dispatch, schedule, ...
  EventFilter filter;
  std::vector<InputSpec> inputs;    // workflow_dispatch and workflow_call
  std::vector<SecretSpec> secrets;  // workflow_call
  std::vector<OutputSpec> outputs;  // workflow_call
  std::vector<Text> cron;           // schedule: validated five-field cron expressions
  // timezones[i]: the IANA zone cron[i] is read in (`timezone:` beside `cron:`); none: UTC.
  std::vector<std::optional<Text>> timezones;
  SourceLocation where;

  const InputSpec* find_input(std::string_view name) const;
  const SecretSpec* find_secret(std::string_view name) const;
};

struct Concurrency {
  Text group;                              // may hold expressions
  std::optional<Text> cancel_in_progress;  // "true", "false" or an expression
  SourceLocation where;
};

struct RunDefaults {
  std::optional<Text> shell;
  std::optional<Text> working_directory;
};

struct Credentials {
  Text username, password;
};

// jobs.<id>.container and jobs.<id>.services.<name>. A container written as one expression
// (`container: ${{ matrix.container }}`) has only `expression` (it yields an image name or a
// mapping), credentials written as one (`credentials: ${{ secrets.REGISTRY }}`) only
// `credentials_expression`; resolve_containers (expand.h) turns both into the fields below.
struct Container {
  std::optional<Text> expression;
  Text image;
  std::optional<Text> options;
  TextMap env;
  std::vector<Text> ports;
  std::vector<Text> volumes;
  std::optional<Credentials> credentials;
  std::optional<Text> credentials_expression;
  SourceLocation where;
};

// jobs.<id>.snapshot: the custom runner image GitHub builds from the job's runner when it ends
// (a name, or {image-name, version, if}). Kiln builds no images: it is accepted and planned.
struct Snapshot {
  Text image_name;
  std::optional<Text> version;
  std::optional<Text> if_condition;
  SourceLocation where;
};

// What a step does. GitHub's parallel steps (June 2026) add control steps beside `run`/`uses`:
// `wait: ID | [IDs]`, `wait-all:` and `cancel: ID`. A `parallel:` group is flattened by the
// loader into its members, each a background step, and one `wait` for all of them, as GitHub
// defines it ("background steps with a wait after").
enum class StepKind { work, wait, wait_all, cancel };

struct Step {
  int index = 0;                   // 0-based position in the job (parallel groups flattened)
  StepKind kind = StepKind::work;  // work: a `run` or `uses` step
  std::optional<Text> id;
  std::optional<Text> name;
  std::optional<Text> if_condition;
  std::optional<Text> run;
  std::optional<Text> uses;
  TextMap with;
  TextMap env;
  std::optional<Text> shell;
  std::optional<Text> working_directory;
  std::optional<Text> continue_on_error;  // "true", "false" or an expression
  std::optional<Text> timeout_minutes;    // a number or an expression
  // `background: true`, or a member of a `parallel:` group: the job goes on to the next step
  // while this one runs.
  bool background = false;
  // wait / cancel: the ids as written; wait-all: none. `targets` are the positions of the
  // background steps they act on (wait-all: every background step before it), resolved and
  // checked by the loader: each is an earlier background step.
  std::vector<Text> target_ids;
  std::vector<int> targets;
  // A member of a `parallel:` group, or the group's closing wait: where `parallel:` is written.
  std::optional<SourceLocation> parallel_group;
  SourceLocation where;

  bool is_control() const { return kind != StepKind::work; }
  // The name shown when `name:` is absent: GitHub's "Run <uses>" / "Run <first line of run>",
  // "Wait for a, b", "Wait for all background steps", "Cancel a", "Wait for the parallel group".
  std::string default_name() const;
};

struct Strategy {
  // The matrix as written: an object whose values are lists (or expressions), plus include and
  // exclude; or, when the whole matrix is one `${{ }}` expression, a JSON string holding it.
  // ordered_json keeps the file's key order, which decides the order of combinations.
  std::optional<nlohmann::ordered_json> matrix;
  SourceLocation matrix_where;
  std::optional<Text> fail_fast;     // default true
  std::optional<Text> max_parallel;  // a number or an expression
  SourceLocation where;
};

// jobs.<id>.runs-on: a label, a list of labels, or {group, labels}. A label may be an
// expression (`${{ matrix.os }}`), evaluated per matrix instance.
struct RunsOn {
  std::vector<Text> labels;
  std::optional<Text> group;
  SourceLocation where;
};

struct Job {
  std::string id;
  SourceLocation where;  // of the job's key
  std::optional<Text> name;
  std::vector<Text> needs;
  std::optional<Text> if_condition;
  RunsOn runs_on;
  std::optional<Text> environment;  // accepted; name or {name, url} rendered as text
  TextMap outputs;
  TextMap env;
  RunDefaults defaults;
  std::optional<Text> timeout_minutes;  // default 360
  std::optional<Text> continue_on_error;
  Boxed<Strategy> strategy;
  Boxed<Concurrency> concurrency;
  Boxed<Container> container;
  Boxed<Snapshot> snapshot;
  std::vector<std::pair<std::string, Container>> services;
  std::optional<Text> services_expression;  // `services: ${{ fromJSON(...) }}`
  std::vector<Step> steps;
  // A job that calls a reusable workflow (`uses: ./.github/workflows/x.yml` or
  // `owner/repo/.github/workflows/x.yml@ref`) has no runs-on and no steps; its `with` values may
  // hold expressions, its secrets are passed by name or all of them with `secrets: inherit`.
  std::optional<Text> uses;
  TextMap with;
  TextMap secrets;
  bool secrets_inherit = false;

  bool calls_workflow() const { return uses.has_value(); }
};

struct Workflow {
  std::filesystem::path path;  // as given to the loader (used in diagnostics)
  std::optional<Text> name;    // defaults to the path relative to the repository
  std::optional<Text> run_name;
  std::vector<Trigger> on;
  TextMap env;
  RunDefaults defaults;
  std::optional<Concurrency> concurrency;
  std::vector<Job> jobs;  // file order
  // id → position in `jobs`, filled by the loader so that find_job stays fast with 100,000
  // jobs; empty (a Workflow built by hand): find_job searches.
  std::map<std::string, size_t, std::less<>> job_index;

  const Job* find_job(std::string_view id) const;
  const Trigger* find_trigger(std::string_view event) const;
};

}  // namespace kiln::workflow
