#pragma once
// The container policy applied when a workflow is loaded (`kiln validate`, `kiln run`), so that a
// refused option stops the run with exit code 2 at FILE:LINE:COL instead of failing the job once
// it is placed. Values holding `${{ }}` are checked when the job starts.

#include "kiln/container/options.h"
#include "kiln/workflow/diagnostic.h"
#include "kiln/workflow/model.h"

namespace kiln::container {

// Errors for refused `options:` (options.h) and `volumes:` of every job container and service.
workflow::Diagnostics check_containers(const workflow::Workflow& workflow,
                                       const ContainerPolicy& policy = {});

}  // namespace kiln::container
