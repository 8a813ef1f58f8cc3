#include "kiln/server/zip_archive.h"

#include <zip.h>

#include <algorithm>
#include <fstream>
#include <vector>

namespace kiln::server {

namespace fs = std::filesystem;

Status write_zip(const fs::path& directory, const fs::path& zip_path) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec))
    return fail(ErrorCode::io_error, "{} is not a directory", directory.string());
  std::vector<fs::path> entries;
  for (auto it = fs::recursive_directory_iterator(directory, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec)) continue;
    if (it->is_directory(ec) || it->is_regular_file(ec)) entries.push_back(it->path());
  }
  if (ec) return fail(ErrorCode::io_error, "cannot read {}: {}", directory.string(), ec.message());
  std::sort(entries.begin(), entries.end());
  if (entries.empty()) {
    // libzip writes no file for an archive without entries; an empty zip is its end record.
    static constexpr char k_empty_zip[22] = {'P', 'K', 5, 6};
    std::ofstream out(zip_path, std::ios::binary | std::ios::trunc);
    out.write(k_empty_zip, sizeof k_empty_zip);
    if (!out) return fail(ErrorCode::io_error, "cannot write {}", zip_path.string());
    return {};
  }

  int code = 0;
  zip_t* archive = zip_open(zip_path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    auto failure = fail(ErrorCode::io_error, "cannot create {}: {}", zip_path.string(),
                        zip_error_strerror(&error));
    zip_error_fini(&error);
    return failure;
  }
  auto give_up = [&](const std::string& what) -> Status {
    auto failure =
        fail(ErrorCode::io_error, "{}: {}: {}", zip_path.string(), what, zip_strerror(archive));
    zip_discard(archive);
    fs::remove(zip_path, ec);
    return failure;
  };
  for (const auto& path : entries) {
    const std::string name = path.lexically_relative(directory).generic_string();
    if (fs::is_directory(path, ec)) {
      if (zip_dir_add(archive, name.c_str(), ZIP_FL_ENC_UTF_8) < 0) return give_up(name);
      continue;
    }
    zip_source_t* source = zip_source_file(archive, path.c_str(), 0, -1);
    if (!source) return give_up(name);
    if (zip_file_add(archive, name.c_str(), source, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE) < 0) {
      zip_source_free(source);
      return give_up(name);
    }
  }
  // The files are read here, when the archive is written.
  if (zip_close(archive) < 0) return give_up("writing");
  return {};
}

}  // namespace kiln::server
