#include "kiln/plan/matrix.h"

#include <algorithm>

namespace kiln::plan {
namespace {

using Json = nlohmann::ordered_json;

// Bounds the product before exclude, so that a matrix of 20 long lists cannot exhaust memory.
constexpr size_t k_max_product = 65536;

bool matches_all(const Json& combination, const Json& entry) {
  for (const auto& [key, value] : entry.items()) {
    auto it = combination.find(key);
    if (it == combination.end() || *it != value) return false;
  }
  return true;
}

Result<std::vector<Json>> entries(const Json& matrix, const char* key) {
  std::vector<Json> out;
  auto it = matrix.find(key);
  if (it == matrix.end() || it->is_null()) return out;
  if (!it->is_array())
    return fail(ErrorCode::invalid_input, "matrix {} must be a list of objects, not {}", key,
                it->type_name());
  for (const Json& entry : *it) {
    if (!entry.is_object())
      return fail(ErrorCode::invalid_input, "matrix {} entries must be objects, not {}", key,
                  entry.type_name());
    out.push_back(entry);
  }
  return out;
}

void flatten(const Json& value, std::vector<std::string>& out) {
  if (value.is_null()) return;
  if (value.is_object() || value.is_array()) {
    for (const auto& item : value) flatten(item, out);
    return;
  }
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (!text.empty()) out.push_back(std::move(text));
}

}  // namespace

Result<std::vector<Json>> expand_matrix(const Json& matrix) {
  if (!matrix.is_object())
    return fail(ErrorCode::invalid_input, "matrix must be an object, not {}", matrix.type_name());
  KILN_TRY(std::vector<Json> include, entries(matrix, "include"));
  KILN_TRY(std::vector<Json> exclude, entries(matrix, "exclude"));

  std::vector<std::string> keys;
  size_t product = 1;
  for (const auto& [key, values] : matrix.items()) {
    if (key == "include" || key == "exclude") continue;
    if (!values.is_array())
      return fail(ErrorCode::invalid_input, "matrix '{}' must be a list of values, not {}", key,
                  values.type_name());
    if (values.empty()) return fail(ErrorCode::invalid_input, "matrix '{}' has no values", key);
    product *= values.size();
    if (product > k_max_product)
      return fail(ErrorCode::invalid_input,
                  "matrix has more than {} combinations before exclude (at most {} jobs may run)",
                  k_max_product, k_max_matrix_jobs);
    keys.push_back(key);
  }

  std::vector<Json> combinations;
  if (!keys.empty()) {
    // An odometer over the value lists; the last key turns fastest.
    std::vector<size_t> index(keys.size(), 0);
    for (bool more = true; more;) {
      Json combination = Json::object();
      for (size_t k = 0; k < keys.size(); ++k) combination[keys[k]] = matrix.at(keys[k])[index[k]];
      if (std::ranges::none_of(exclude, [&](const Json& e) { return matches_all(combination, e); }))
        combinations.push_back(std::move(combination));
      more = false;
      for (size_t k = keys.size(); k-- > 0;) {
        if (++index[k] < matrix.at(keys[k]).size()) {
          more = true;
          break;
        }
        index[k] = 0;
      }
    }
  }

  const size_t original = combinations.size();
  auto is_original_key = [&](const std::string& key) {
    return std::ranges::find(keys, key) != keys.end();
  };
  for (const Json& entry : include) {
    bool fitted = false;
    for (size_t i = 0; i < original; ++i) {
      Json& combination = combinations[i];
      bool fits = true;
      for (const auto& [key, value] : entry.items())
        if (is_original_key(key) && combination.at(key) != value) fits = false;
      if (!fits) continue;
      fitted = true;
      for (const auto& [key, value] : entry.items())
        if (!is_original_key(key)) combination[key] = value;
    }
    if (!fitted) combinations.push_back(entry);
  }

  if (combinations.empty())
    return fail(ErrorCode::invalid_input,
                "matrix produces no jobs (every combination is excluded)");
  if (combinations.size() > k_max_matrix_jobs)
    return fail(ErrorCode::invalid_input, "matrix produces {} jobs, more than the limit of {}",
                combinations.size(), k_max_matrix_jobs);
  return combinations;
}

std::string matrix_values_text(const Json& combination) {
  std::vector<std::string> parts;
  flatten(combination, parts);
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + parts[i];
  return text;
}

std::string matrix_job_name(std::string_view job_name, const Json& combination) {
  std::string values = matrix_values_text(combination);
  if (values.empty()) return std::string(job_name);
  return fmt::format("{} ({})", job_name, values);
}

}  // namespace kiln::plan
