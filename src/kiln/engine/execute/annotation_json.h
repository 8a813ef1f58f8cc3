#pragma once
// A job's annotation as JSON: the one shape the job row's extra (GET /api/runs/ID's job
// annotations, docs/serve.md) and the Slurm agent's outcome file (slurm_job.h) write it in:
// {level: "error"|"warning"|"notice", message, title, file, line, end_line, column, end_column}.

#include <nlohmann/json.hpp>

#include "kiln/exec/log_sink.h"

namespace kiln::engine {

nlohmann::json annotation_to_json(const exec::Annotation& annotation);
// The reverse; a level written as its number (outcome files of an older agent) is read too.
// Throws nlohmann::json::exception on a wrong shape, as the readers of these files expect.
exec::Annotation annotation_from_json(const nlohmann::json& json);

}  // namespace kiln::engine
