#pragma once
// `kiln serve`: one process with the HTTP API, the webhook receiver and the run queue, on the
// SQLite store (docs/serve.md). The HTTP server runs on its own threads (cpp-httplib's pool);
// runs happen on the queue's workers.

#include <atomic>
#include <memory>
#include <string>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"
#include "kiln/engine/engine.h"

namespace kiln::server {

struct ServeOptions {
  config::HostConfig config;
  // Engine options every run shares (GPU labels, host store, actions mirror, simulated GPUs).
  engine::RunOptions base;
  // Where the bound port is written once the server listens ("" for nowhere): with
  // `listen: HOST:0` it is how a script learns the port.
  std::string port_file;
};

// Serves until `stop` becomes true (a signal handler sets it), then shuts down gracefully:
// webhooks get 503, no new trigger starts, running ones get serve.shutdown_grace to finish and
// are then cancelled; returns once every worker stopped. Errors: the store, the address.
Status serve(const ServeOptions& options, const std::atomic<bool>& stop);

}  // namespace kiln::server
