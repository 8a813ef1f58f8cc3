#include "kiln/container/images.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/plan/matrix.h"
#include "kiln/workflow/expr/expr.h"

namespace kiln::container {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// The context names an expression's source reads: names that are not a property (after '.'),
// a function (before '('), a literal or inside a 'string'.
void scan_contexts(std::string_view source, std::vector<std::string>& out) {
  std::size_t i = 0;
  char previous = '\0';  // the last character that is not a space
  while (i < source.size()) {
    char c = source[i];
    if (c == '\'') {  // a string: '' is a quote inside it
      for (++i; i < source.size(); ++i) {
        if (source[i] != '\'') continue;
        if (i + 1 < source.size() && source[i + 1] == '\'') {
          ++i;
          continue;
        }
        break;
      }
      ++i;
      previous = '\'';
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // a number, hex and exponents included
      while (i < source.size() && (is_name_char(source[i]) || source[i] == '.')) ++i;
      previous = '0';
      continue;
    }
    if (is_name_start(c)) {
      std::size_t start = i;
      while (i < source.size() && is_name_char(source[i])) ++i;
      std::string name(source.substr(start, i - start));
      std::ranges::transform(name, name.begin(),
                             [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      std::size_t next = i;
      while (next < source.size() && std::isspace(static_cast<unsigned char>(source[next]))) ++next;
      bool property = previous == '.';
      bool function = next < source.size() && source[next] == '(';
      bool literal = name == "true" || name == "false" || name == "null" || name == "nan" ||
                     name == "infinity";
      if (!property && !function && !literal && std::ranges::find(out, name) == out.end())
        out.push_back(name);
      previous = 'a';
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) previous = c;
    ++i;
  }
}

class Collector {
 public:
  explicit Collector(WorkflowImages& out) : out_(out) {}

  void job(const workflow::Job& job) {
    job_ = &job;
    combinations_.clear();
    matrix_problem_.clear();
    has_matrix_ = job.strategy && job.strategy->matrix;
    if (has_matrix_) {
      const auto& matrix = *job.strategy->matrix;
      if (!matrix.is_object() || matrix.dump().find("${{") != std::string::npos) {
        matrix_problem_ = "the job's matrix is written with expressions";
      } else if (auto expanded = plan::expand_matrix(matrix)) {
        combinations_ = std::move(*expanded);
      } else {
        matrix_problem_ = expanded.error().message;
      }
    }
    if (job.container) container(*job.container, "container");
    if (job.services_expression)
      single(*job.services_expression, "services",
             [this](const expr::Value& value, const workflow::Text& text) {
               if (!value.is_object()) return;
               for (const auto& [key, service] : value.items())
                 from_value(service, text, "service " + key);
             });
    for (const auto& [key, spec] : job.services) container(spec, "service " + key);
    for (const auto& step : job.steps) {
      if (!step.uses || !step.uses->value.starts_with("docker://")) continue;
      workflow::Text image = *step.uses;
      image.value.erase(0, std::string_view("docker://").size());
      image.where.column += static_cast<int>(std::string_view("docker://").size());
      text(image, fmt::format("docker:// step {}", step.index + 1));
    }
  }

 private:
  void container(const workflow::Container& spec, const std::string& role) {
    if (spec.expression) {
      single(*spec.expression, role,
             [this, &role](const expr::Value& value, const workflow::Text& written) {
               from_value(value, written, role);
             });
      return;
    }
    text(spec.image, role);
  }

  // A value an expression gave for a container: an image name, or a mapping with `image`.
  void from_value(const expr::Value& value, const workflow::Text& written,
                  const std::string& role) {
    std::string image;
    if (value.is_string()) image = value.get<std::string>();
    if (value.is_object() && value.contains("image") && value["image"].is_string())
      image = value["image"].get<std::string>();
    if (!image.empty()) add(image, written.where, role);
  }

  // A text naming an image, with or without expressions.
  void text(const workflow::Text& written, const std::string& role) {
    if (!expr::has_template(written.value)) {
      if (!written.value.empty()) add(written.value, written.where, role);
      return;
    }
    single(written, role, [this, &role](const expr::Value& value, const workflow::Text& where) {
      if (value.is_string() || value.is_number()) {
        std::string image = expr::to_text(value);
        if (!image.empty()) add(image, where.where, role);
      }
    });
  }

  // Evaluates `written` once per matrix combination when it reads only the matrix.
  template <typename Use>
  void single(const workflow::Text& written, const std::string& role, Use use) {
    auto contexts = contexts_read(written.value);
    std::vector<std::string> others;
    for (const auto& name : contexts)
      if (name != "matrix") others.push_back(name);
    if (!others.empty())
      return unresolved(
          written, role,
          fmt::format("it reads {} (known only when the job runs)", fmt::join(others, ", ")));
    if (!contexts.empty() && !has_matrix_)
      return unresolved(written, role, "it reads the matrix, and the job has none");
    if (!contexts.empty() && !matrix_problem_.empty())
      return unresolved(written, role, matrix_problem_);
    std::vector<nlohmann::ordered_json> combinations = combinations_;
    if (contexts.empty()) combinations = {nullptr};
    for (const auto& combination : combinations) {
      expr::Context context;
      context.contexts["matrix"] = expr::Value::parse(combination.dump());
      auto value = expr::evaluate_template(written.value, context, written.where);
      if (!value) return unresolved(written, role, value.error().message);
      use(*value, written);
    }
  }

  void add(const std::string& image, const SourceLocation& where, const std::string& role) {
    bool seen = std::ranges::any_of(out_.uses, [&](const ImageUse& use) {
      return use.image == image && use.where.line == where.line &&
             use.where.column == where.column && use.where.file == where.file;
    });
    if (!seen) out_.uses.push_back({image, where, job_->id, role});
  }

  void unresolved(const workflow::Text& written, const std::string& role, std::string reason) {
    out_.unresolved.push_back({written.where, job_->id, role, written.value, std::move(reason)});
  }

  WorkflowImages& out_;
  const workflow::Job* job_ = nullptr;
  bool has_matrix_ = false;
  std::vector<nlohmann::ordered_json> combinations_;
  std::string matrix_problem_;
};

}  // namespace

std::vector<std::string> contexts_read(std::string_view text) {
  std::vector<std::string> out;
  auto parsed = expr::Template::parse(text);
  if (!parsed) {
    // Not a valid template: `kiln validate` says why; the caller cannot evaluate it either.
    out.push_back("(an expression that does not parse)");
    return out;
  }
  for (const auto& expression : parsed->expressions()) scan_contexts(expression.source(), out);
  return out;
}

HostImage look_up_image(EngineCli& engine, const std::string& image, bool pull) {
  HostImage out;
  out.image = image;
  auto before = engine.ensure_image(image, PullPolicy::never);
  if (before) {
    out.present = true;
    out.id = before->id;
    out.digest = before->digest;
  }
  if (!pull) return out;
  auto after = engine.ensure_image(image, PullPolicy::always);
  if (!after) {
    out.error = after.error().message;
    return out;
  }
  out.pulled = true;
  out.present = true;
  // The id says whether the tag names other content; the digest alone can change without it
  // (the same image pulled from a registry for the first time).
  if (before && after->id != before->id)
    out.moved_from = before->digest.empty() ? before->id : before->digest;
  out.id = after->id;
  out.digest = after->digest;
  return out;
}

WorkflowImages collect_images(const workflow::Workflow& workflow) {
  WorkflowImages out;
  Collector collector(out);
  for (const auto& job : workflow.jobs) collector.job(job);
  return out;
}

}  // namespace kiln::container
