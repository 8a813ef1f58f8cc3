#pragma once
// Fetching actions and reusable workflows of other repositories (`owner/repo@ref`,
// `owner/repo/path@ref`) from a forge, as act does: the ref is resolved with `git ls-remote`
// (a full 40-hex SHA is taken as is), the commit is fetched shallow (--depth 1) into
// CACHE/<forge hash>/<owner>/<repo>/<sha>/ and kept there, so every later use of that commit
// reads the cache. The forge is kiln.yml's `actions.url` (default https://github.com; a
// GitHub Enterprise host, an internal mirror or a file:// directory of repositories).

#include <filesystem>
#include <string>
#include <string_view>

#include "kiln/core/result.h"
#include "kiln/workflow/references.h"

namespace kiln::exec {

struct ActionFetchSettings {
  std::string url = "https://github.com";  // OWNER/REPO is appended
  std::filesystem::path cache;             // the host's state directory's actions/
};

// The checkout of owner/repo at ref, fetched once per resolved commit. not_found when the
// repository or ref does not exist, io_error when git cannot reach it.
Result<workflow::FetchedRepository> fetch_repository(const ActionFetchSettings& settings,
                                                     std::string_view owner, std::string_view repo,
                                                     std::string_view ref);

// fetch_repository bound to `settings`, for ReferenceRoots::fetch.
workflow::RepositoryFetcher repository_fetcher(ActionFetchSettings settings);

}  // namespace kiln::exec
