#include "kiln/exec/actions.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "kiln/exec/actions_support.h"
#include "kiln/exec/artifact.h"
#include "kiln/exec/cache.h"
#include "kiln/exec/checkout.h"
#include "kiln/exec/sarif.h"

namespace kiln::exec {

namespace {

enum class Builtin {
  checkout,
  upload_artifact,
  download_artifact,
  cache,
  cache_restore,
  cache_save,
  upload_sarif
};

struct BuiltinName {
  std::string_view name;
  Builtin kind;
};

constexpr BuiltinName k_builtins[] = {
    {"actions/checkout", Builtin::checkout},
    {"actions/upload-artifact", Builtin::upload_artifact},
    {"actions/download-artifact", Builtin::download_artifact},
    {"actions/cache", Builtin::cache},
    {"actions/cache/restore", Builtin::cache_restore},
    {"actions/cache/save", Builtin::cache_save},
    {"github/codeql-action/upload-sarif", Builtin::upload_sarif},
};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

// "owner/repo[/path]@ref" -> the built-in it names, if any. The ref may be anything (a tag,
// a branch, a commit sha) but must be there, as GitHub requires.
std::optional<Builtin> builtin_kind(std::string_view uses) {
  auto at = uses.rfind('@');
  if (at == std::string_view::npos || at + 1 == uses.size()) return std::nullopt;
  std::string_view name = uses.substr(0, at);
  for (const auto& builtin : k_builtins) {
    if (equal_ignoring_case(name, builtin.name)) return builtin.kind;
  }
  return std::nullopt;
}

// Failures the workflow author caused or can fix fail the step; the rest are kiln's errors.
Result<ActionResult> as_step_result(Result<ActionResult> result) {
  if (result) return result;
  switch (result.error().code) {
    case ErrorCode::invalid_input:
    case ErrorCode::not_found:
    case ErrorCode::unsupported: {
      ActionResult failed;
      failed.success = false;
      failed.error = result.error().message;
      return failed;
    }
    default:
      return result;
  }
}

}  // namespace

bool is_builtin_action(std::string_view uses) { return builtin_kind(uses).has_value(); }

std::string unavailable_action_message(std::string_view uses) {
  std::string message = fmt::format("action '{}' is not available: ", uses);
  if (uses.starts_with("docker://")) {
    message += "kiln does not run Docker container actions; ";
  } else if (uses.find('@') == std::string_view::npos && !uses.starts_with("./")) {
    message += "a remote action needs a version ('owner/repo@ref'), and ";
  }
  std::string names;
  for (const auto& builtin : k_builtins)
    names += (names.empty() ? "" : ", ") + std::string(builtin.name);
  message += fmt::format(
      "kiln runs only its built-in actions ({}), local actions (uses: ./path/to/action), "
      "actions found in an actions mirror (--actions-mirror DIR or KILN_ACTIONS_MIRROR, holding "
      "DIR/owner/repo@ref/) and, with kiln.yml actions.url, actions fetched from that forge; use "
      "a 'run:' step, copy the action into the repository or mirror it",
      names);
  return message;
}

Result<ActionResult> run_builtin_action(std::string_view uses,
                                        const std::map<std::string, std::string>& with,
                                        const ActionContext& context) {
  auto kind = builtin_kind(uses);
  if (!kind) {
    ActionResult failed;
    failed.success = false;
    failed.error = unavailable_action_message(uses);
    return failed;
  }
  switch (*kind) {
    case Builtin::checkout:
      return as_step_result(run_checkout(with, context));
    case Builtin::upload_artifact:
      return as_step_result(run_upload_artifact(with, context));
    case Builtin::download_artifact:
      return as_step_result(run_download_artifact(with, context));
    case Builtin::cache:
      return as_step_result(run_cache(CacheAction::cache, uses, with, context));
    case Builtin::cache_restore:
      return as_step_result(run_cache(CacheAction::restore, uses, with, context));
    case Builtin::cache_save:
      return as_step_result(run_cache(CacheAction::save, uses, with, context));
    case Builtin::upload_sarif:
      return as_step_result(run_upload_sarif(with, context));
  }
  return fail(ErrorCode::internal, "unhandled built-in action '{}'", uses);
}

Result<ActionResult> run_post_action(const PostAction& post, const ActionContext& context) {
  if (builtin_kind(post.uses) == Builtin::cache) {
    return as_step_result(run_cache_post(post, context));
  }
  return fail(ErrorCode::internal, "'{}' has no post step", post.uses);
}

}  // namespace kiln::exec
