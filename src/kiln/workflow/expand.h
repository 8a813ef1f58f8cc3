#pragma once
// Mappings written as one expression, evaluated once their contexts exist: `env:` and `with:`
// (`env: ${{ fromJSON(needs.setup.outputs.env) }}`), `container:`, `services:` and
// `credentials:`. What the expression yields must be a mapping (an image name, too, for a
// container); anything else is an error at the expression, naming the type it gave.
//
// The values that come out are data, not templates: a value holding `${{` is kept as written
// (wrapped so that later interpolation gives it back unchanged), as GitHub never evaluates the
// result of an expression again.

#include <optional>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/model.h"

namespace kiln::workflow {

// `map` itself when it has no expression; else the entries of the mapping it yields, in the
// mapping's order (scalars as text; null as ""). `name` is the key ("env", "with") for errors.
Result<TextMap> expand_mapping(const TextMap& map, const expr::Context& context,
                               std::string_view name);

// The job with its container, services and credentials given as expressions evaluated: a
// container that yields "" or null is no container, a string is an image name, a mapping is
// read like a written `container:` (image, options, env, ports, volumes, credentials).
// nullopt when the job has none of these expressions: it is used as it is.
Result<std::optional<Job>> resolve_containers(const Job& job, const expr::Context& context);

// A Text whose interpolation gives `value` back unchanged, at `where`.
Text literal_text(const std::string& value, const SourceLocation& where);

// "a string", "a number", "a boolean", "null", "an array", "a mapping".
const char* value_kind(const expr::Value& value);

}  // namespace kiln::workflow
