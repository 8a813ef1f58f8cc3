#include "kiln/workflow/expand.h"

#include <algorithm>

#include <fmt/format.h>

namespace kiln::workflow {

namespace {

// A scalar of a yielded mapping as text; arrays and mappings are errors.
Result<Text> scalar_text(const expr::Value& value, const Text& source, std::string_view name) {
  if (value.is_object() || value.is_array())
    return fail_at(source.where, "'{}' must be a string, a number or a boolean, not {}", name,
                   value_kind(value));
  return literal_text(value.is_null() ? std::string() : expr::to_text(value), source.where);
}

Result<expr::Value> evaluate_mapping(const Text& source, const expr::Context& context,
                                     std::string_view name) {
  KILN_TRY(auto value, expr::evaluate_template(source.value, context, source.where));
  if (!value.is_object()) {
    std::string shown = value.is_string() ? fmt::format(" ('{}')", value.get<std::string>()) : "";
    return fail_at(source.where, "'{}' must evaluate to a mapping, not {}{}", name,
                   value_kind(value), shown);
  }
  return value;
}

Result<TextMap> text_map_of(const expr::Value& object, const Text& source, std::string_view name) {
  TextMap map;
  for (const auto& [key, value] : object.items()) {
    KILN_TRY(auto text, scalar_text(value, source, fmt::format("{}.{}", name, key)));
    map.emplace_back(key, std::move(text));
  }
  return map;
}

Result<std::vector<Text>> text_list_of(const expr::Value& value, const Text& source,
                                       std::string_view name) {
  std::vector<Text> list;
  if (!value.is_array()) {
    KILN_TRY(auto one, scalar_text(value, source, name));
    list.push_back(std::move(one));
    return list;
  }
  for (const auto& item : value) {
    KILN_TRY(auto text, scalar_text(item, source, name));
    list.push_back(std::move(text));
  }
  return list;
}

Result<Credentials> credentials_of(const expr::Value& value, const Text& source) {
  if (!value.is_object() || !value.contains("username") || !value.contains("password") ||
      value.size() != 2)
    return fail_at(source.where,
                   "'credentials' must evaluate to a mapping of 'username' and 'password', not "
                   "{}",
                   value.is_object() ? "a mapping with other keys" : value_kind(value));
  Credentials credentials;
  KILN_TRY(credentials.username, scalar_text(value["username"], source, "credentials.username"));
  KILN_TRY(credentials.password, scalar_text(value["password"], source, "credentials.password"));
  return credentials;
}

// A container (or service) that an expression gave: nullopt for "" or null.
Result<std::optional<Container>> container_of(const expr::Value& value, const Text& source,
                                              std::string_view what) {
  Container container;
  container.where = source.where;
  if (value.is_null() || (value.is_string() && value.get<std::string>().empty()))
    return std::optional<Container>{};
  if (value.is_string()) {
    container.image = literal_text(value.get<std::string>(), source.where);
    return std::optional<Container>{std::move(container)};
  }
  if (!value.is_object())
    return fail_at(source.where, "{} must evaluate to an image name or a mapping, not {}", what,
                   value_kind(value));
  bool has_image = false;
  for (const auto& [key, field] : value.items()) {
    if (key == "image") {
      KILN_TRY(container.image, scalar_text(field, source, "image"));
      has_image = true;
    } else if (key == "options") {
      KILN_TRY(container.options, scalar_text(field, source, "options"));
    } else if (key == "env") {
      if (!field.is_object())
        return fail_at(source.where, "'env' of {} must be a mapping, not {}", what,
                       value_kind(field));
      KILN_TRY(container.env, text_map_of(field, source, "env"));
    } else if (key == "ports") {
      KILN_TRY(container.ports, text_list_of(field, source, "ports"));
    } else if (key == "volumes") {
      KILN_TRY(container.volumes, text_list_of(field, source, "volumes"));
    } else if (key == "credentials") {
      KILN_TRY(container.credentials, credentials_of(field, source));
    } else {
      return fail_at(source.where,
                     "{} evaluated to a mapping with the unknown key '{}' (image, options, env, "
                     "ports, volumes, credentials)",
                     what, key);
    }
  }
  if (!has_image) return fail_at(source.where, "{} evaluated to a mapping without 'image'", what);
  return std::optional<Container>{std::move(container)};
}

// Credentials written as one expression, evaluated into the container.
Status resolve_credentials(Container& container, const expr::Context& context) {
  if (!container.credentials_expression) return {};
  const Text& source = *container.credentials_expression;
  KILN_TRY(auto value, expr::evaluate_template(source.value, context, source.where));
  KILN_TRY(container.credentials, credentials_of(value, source));
  container.credentials_expression.reset();
  return {};
}

}  // namespace

const char* value_kind(const expr::Value& value) {
  switch (value.type()) {
    case expr::Value::value_t::null:
      return "null";
    case expr::Value::value_t::boolean:
      return "a boolean";
    case expr::Value::value_t::string:
      return "a string";
    case expr::Value::value_t::array:
      return "an array";
    case expr::Value::value_t::object:
      return "a mapping";
    default:
      return "a number";
  }
}

Text literal_text(const std::string& value, const SourceLocation& where) {
  if (!expr::has_template(value)) return Text{value, where};
  std::string quoted;
  for (char c : value) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return Text{fmt::format("${{{{ '{}' }}}}", quoted), where};
}

Result<TextMap> expand_mapping(const TextMap& map, const expr::Context& context,
                               std::string_view name) {
  if (!map.expression) return map;
  KILN_TRY(auto object, evaluate_mapping(*map.expression, context, name));
  return text_map_of(object, *map.expression, name);
}

Result<std::optional<Job>> resolve_containers(const Job& job, const expr::Context& context) {
  auto written_as_expression = [](const Container& c) {
    return c.expression || c.credentials_expression;
  };
  if (!job.services_expression && !(job.container && written_as_expression(*job.container)) &&
      std::ranges::none_of(job.services,
                           [&](const auto& s) { return written_as_expression(s.second); }))
    return std::optional<Job>{};
  Job resolved = job;
  if (job.container && job.container->expression) {
    const Text& source = *job.container->expression;
    KILN_TRY(auto value, expr::evaluate_template(source.value, context, source.where));
    KILN_TRY(resolved.container, container_of(value, source, "'container'"));
  }
  if (job.services_expression) {
    const Text& source = *job.services_expression;
    KILN_TRY(auto object, evaluate_mapping(source, context, "services"));
    resolved.services_expression.reset();
    for (const auto& [key, value] : object.items()) {
      KILN_TRY(auto service, container_of(value, source, fmt::format("service '{}'", key)));
      if (service) resolved.services.emplace_back(key, std::move(*service));
    }
  }
  std::vector<std::pair<std::string, Container>> services;
  for (auto& [key, service] : resolved.services) {
    if (service.expression) {
      const Text& source = *service.expression;
      KILN_TRY(auto value, expr::evaluate_template(source.value, context, source.where));
      KILN_TRY(auto evaluated, container_of(value, source, fmt::format("service '{}'", key)));
      if (!evaluated) continue;
      service = std::move(*evaluated);
    }
    KILN_TRY_VOID(resolve_credentials(service, context));
    services.emplace_back(key, std::move(service));
  }
  resolved.services = std::move(services);
  if (resolved.container) KILN_TRY_VOID(resolve_credentials(*resolved.container, context));
  return std::optional<Job>{std::move(resolved)};
}

}  // namespace kiln::workflow
