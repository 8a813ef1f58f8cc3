#include "kiln/exec/action_fetch.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>

#include "kiln/exec/actions_support.h"

namespace kiln::exec {

namespace fs = std::filesystem;

namespace {

bool is_full_sha(std::string_view ref) {
  return ref.size() == 40 && std::ranges::all_of(ref, [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

// The commit `ref` names at `url`: a tag (peeled) before a branch, as GitHub resolves `@ref`.
Result<std::string> resolve_ref(const std::string& url, std::string_view ref) {
  std::string tag = "refs/tags/" + std::string(ref), branch = "refs/heads/" + std::string(ref);
  KILN_TRY(auto listed, run_git({"ls-remote", "--", url, tag, tag + "^{}", branch}, "/"));
  if (!listed.ok()) return fail(ErrorCode::io_error, "cannot read {}: {}", url, listed.reason());
  std::string found, found_rank = "9";
  std::string_view rest = listed.out;
  while (!rest.empty()) {
    auto newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
    auto tab = line.find('\t');
    if (tab == std::string_view::npos) continue;
    std::string_view name = line.substr(tab + 1);
    std::string rank = name == tag + "^{}" ? "0" : name == tag ? "1" : "2";
    if (rank < found_rank) {
      found_rank = rank;
      found = std::string(line.substr(0, tab));
    }
  }
  if (found.empty()) return fail(ErrorCode::not_found, "{} has no tag or branch '{}'", url, ref);
  return found;
}

}  // namespace

Result<workflow::FetchedRepository> fetch_repository(const ActionFetchSettings& settings,
                                                     std::string_view owner, std::string_view repo,
                                                     std::string_view ref) {
  std::string base = settings.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url = fmt::format("{}/{}/{}", base, owner, repo);
  std::string sha;
  if (is_full_sha(ref)) {
    sha = std::string(ref);
    std::ranges::transform(sha, sha.begin(), [](char c) { return std::tolower(c); });
  } else {
    KILN_TRY(sha, resolve_ref(url, ref));
  }
  fs::path dir =
      settings.cache / stable_hash_hex(base) / std::string(owner) / std::string(repo) / sha;
  std::error_code ec;
  if (fs::exists(dir / ".git", ec)) return workflow::FetchedRepository{dir, sha, url};
  // Fetched beside its place, then renamed into it: a half-done fetch is never used, and two
  // jobs fetching the same commit at once both end with the same directory.
  fs::create_directories(dir.parent_path(), ec);
  if (ec)
    return fail(ErrorCode::io_error, "cannot create {}: {}", dir.parent_path().string(),
                ec.message());
  fs::path partial = dir.string() + fmt::format(".partial-{}", ::getpid());
  fs::remove_all(partial, ec);
  auto cleanup = [&] { fs::remove_all(partial, ec); };
  KILN_TRY(auto init, run_git({"init", "-q", partial.string()}, "/"));
  if (!init.ok()) {
    cleanup();
    return fail(ErrorCode::io_error, "git init {}: {}", partial.string(), init.reason());
  }
  KILN_TRY(auto fetched, run_git({"fetch", "-q", "--depth", "1", "--", url, sha}, partial));
  if (!fetched.ok() && !is_full_sha(ref)) {  // a server that refuses a fetch by commit
    KILN_TRY(fetched,
             run_git({"fetch", "-q", "--depth", "1", "--", url, std::string(ref)}, partial));
  }
  if (!fetched.ok()) {
    cleanup();
    return fail(is_full_sha(ref) ? ErrorCode::not_found : ErrorCode::io_error,
                "cannot fetch {} at {}: {}", url, sha, fetched.reason());
  }
  KILN_TRY(auto checkout, run_git({"checkout", "-q", "--detach", "FETCH_HEAD"}, partial));
  KILN_TRY(auto head, run_git({"rev-parse", "HEAD"}, partial));
  std::string got = head.out.substr(0, head.out.find('\n'));
  if (!checkout.ok() || got != sha) {
    cleanup();
    return fail(ErrorCode::io_error, "fetching {} at {} gave commit {}: {}", url, sha, got,
                checkout.reason());
  }
  fs::rename(partial, dir, ec);
  if (ec) {
    cleanup();  // another job got there first
    if (!fs::exists(dir / ".git"))
      return fail(ErrorCode::io_error, "cannot store {} in {}: {}", url, dir.string(),
                  ec.message());
  }
  return workflow::FetchedRepository{dir, sha, url};
}

workflow::RepositoryFetcher repository_fetcher(ActionFetchSettings settings) {
  // One resolution of a ref per fetcher (one run): every step of the run uses the same commit.
  struct Memo {
    std::mutex mutex;
    std::map<std::string, Result<workflow::FetchedRepository>> done;
  };
  auto memo = std::make_shared<Memo>();
  return [settings = std::move(settings), memo](std::string_view owner, std::string_view repo,
                                                std::string_view ref) {
    std::string key = fmt::format("{}/{}@{}", owner, repo, ref);
    std::lock_guard lock(memo->mutex);
    if (auto it = memo->done.find(key); it != memo->done.end()) return it->second;
    auto fetched = fetch_repository(settings, owner, repo, ref);
    memo->done.emplace(key, fetched);
    return fetched;
  };
}

}  // namespace kiln::exec
