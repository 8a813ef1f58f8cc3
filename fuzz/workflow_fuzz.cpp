// load_workflow_text on arbitrary bytes: every outcome is a LoadResult, never a crash, a hang or
// an escaped yaml-cpp exception; and a result holds a workflow exactly when it has no errors.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kiln/workflow/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::workflow::LoadResult result = kiln::workflow::load_workflow_text(text, "fuzz.yml");
  if (result.workflow.has_value() == kiln::workflow::has_errors(result.diagnostics)) std::abort();
  for (const auto& diagnostic : result.diagnostics)
    if (diagnostic.to_string().empty()) std::abort();
  return 0;
}
