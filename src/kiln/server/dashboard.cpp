#include "kiln/server/dashboard.h"

#include <httplib.h>

#include "kiln/report/report.h"
#include "kiln/server/query.h"
#include "kiln/server/reply.h"
#include "kiln/store/store.h"

namespace kiln::server {
namespace {

using json = nlohmann::ordered_json;

const EmbeddedFile* find_file(std::string_view path) {
  for (const auto& file : dashboard_files())
    if (file.path == path) return &file;
  return nullptr;
}

void serve_file(const httplib::Request& req, httplib::Response& res) {
  const EmbeddedFile* file = dashboard_file_for(req.path);
  if (!file) return reply_error(res, 404, "no such dashboard file");
  // Assets have content hashes in their names (vite): they never change under one name. The
  // page itself names the current assets, so it is revalidated each time.
  res.set_header("Cache-Control", file->path.starts_with("assets/")
                                      ? "public, max-age=31536000, immutable"
                                      : "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(file->data.data(), file->data.size(), std::string(content_type_of(file->path)));
}

}  // namespace

const EmbeddedFile* dashboard_file_for(std::string_view request_path) {
  if (request_path == "/" || request_path == "/ui" || request_path == "/ui/")
    return find_file("index.html");
  constexpr std::string_view k_prefix = "/ui/";
  if (!request_path.starts_with(k_prefix)) return nullptr;
  const std::string_view rest = request_path.substr(k_prefix.size());
  if (const auto* file = find_file(rest)) return file;
  // A missing asset is a 404, not the page: a script tag must not receive HTML.
  if (rest.starts_with("assets/")) return nullptr;
  return find_file("index.html");
}

std::string_view content_type_of(std::string_view path) {
  struct Type {
    std::string_view extension, type;
  };
  static constexpr Type k_types[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".woff2", "font/woff2"},
      {".map", "application/json"},
  };
  for (const auto& [extension, type] : k_types)
    if (path.ends_with(extension)) return type;
  return "application/octet-stream";
}

void register_dashboard_routes(httplib::Server& http, store::Store& store) {
  http.Get("/", serve_file);
  http.Get("/ui", serve_file);
  http.Get(R"(/ui/.*)", serve_file);
  // The report document of `kiln report RUN --format json`, built by the same function, for the
  // run page's tests and benchmark trends. Readable without a token, as runs are.
  http.Get(R"(/api/runs/(\d+)/report)",
           [&store](const httplib::Request& req, httplib::Response& res) {
             const auto id = path_id(req, res, "run");
             if (!id) return;
             report::ReportOptions options;
             std::int64_t slowest = options.slowest;
             if (auto read = read_integers(req.params, {{"slowest", &slowest, 0, 10000}}); !read)
               return reply_error(res, 400, read.error().message);
             options.slowest = static_cast<int>(slowest);
             auto document = report::build_run_report(store, *id, options);
             if (!document) return reply_error(res, document.error());
             reply(res, 200, *document);
           });
}

}  // namespace kiln::server
