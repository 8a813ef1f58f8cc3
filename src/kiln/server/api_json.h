#pragma once
// The JSON the API answers with (schema in docs/serve.md): records as objects whose keys are
// the record's fields, times in milliseconds since the epoch, statuses by their lowercase names.

#include <nlohmann/json.hpp>

#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/store/records.h"

namespace kiln::server {

nlohmann::ordered_json to_json(const store::Run& run);
nlohmann::ordered_json to_json(const store::RunDetail& detail);  // the run with jobs and steps
nlohmann::ordered_json to_json(const store::LogChunk& chunk);
nlohmann::ordered_json to_json(const store::Trigger& trigger);  // without the payload
nlohmann::ordered_json to_json(int index, const engine::GpuState& state);

}  // namespace kiln::server
