// load_action_text on arbitrary bytes: every outcome is an ActionLoadResult, never a crash, a
// hang or an escaped yaml-cpp exception; a result holds an action exactly when it has no errors,
// and a composite action's run steps all have a shell.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/workflow/action.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto result = kiln::workflow::load_action_text(text, "action.yml");
  if (result.action.has_value() == kiln::workflow::has_errors(result.diagnostics)) std::abort();
  for (const auto& diagnostic : result.diagnostics)
    if (diagnostic.to_string().empty()) std::abort();
  if (result.action && result.action->kind == kiln::workflow::ActionKind::composite)
    for (const auto& step : result.action->steps)
      if (step.run && !step.shell) std::abort();
  return 0;
}
