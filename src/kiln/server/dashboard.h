#pragma once
// The dashboard (docs/serve.md#dashboard): a single-page application built from dashboard/ with
// npm; its built files (dashboard/dist, committed) are compiled into the binary by
// cmake/embed_files.cmake, so `kiln serve` needs neither npm nor files beside it at run time.
//
// Routes: `/` and `/ui/...` answer the page (unknown paths under /ui/ too: the page routes on
// the client), `/ui/assets/...` the hashed scripts and styles, and `GET /api/runs/ID/report`
// the run's report, the document `kiln report RUN --format json` prints.

#include <span>
#include <string_view>

namespace httplib {
class Server;
}

namespace kiln::store {
class Store;
}

namespace kiln::server {

// One built file: its path under dist/ ("index.html", "assets/index-1a2b.js") and its bytes.
struct EmbeddedFile {
  std::string_view path;
  std::string_view data;
};

// The built dashboard (generated at build time from dashboard/dist).
std::span<const EmbeddedFile> dashboard_files();

// The file served for a request path ("/", "/ui/runs/3", "/ui/assets/x.js"): the asset when one
// has that path, the page itself for any other path under /ui/, nullptr otherwise.
const EmbeddedFile* dashboard_file_for(std::string_view request_path);

// "text/javascript; charset=utf-8" and so on, from the file name's extension.
std::string_view content_type_of(std::string_view path);

// Adds the dashboard's routes to the server; `store` outlives it.
void register_dashboard_routes(httplib::Server& http, store::Store& store);

}  // namespace kiln::server
