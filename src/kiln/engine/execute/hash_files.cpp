#include "kiln/engine/execute/hash_files.h"

#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "kiln/workflow/glob.h"

namespace kiln::engine {
namespace {

class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr);
  }
  void update(const void* data, size_t size) { EVP_DigestUpdate(context_.get(), data, size); }
  std::string raw() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_DigestFinal_ex(context_.get(), digest, &size);
    return std::string(reinterpret_cast<char*>(digest), size);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context_;
};

std::string hex(const std::string& raw) {
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace

Result<std::string> hash_files(const std::filesystem::path& workspace,
                               const std::vector<std::string>& patterns) {
  std::vector<std::string> cleaned;
  for (auto pattern : patterns) {
    bool negated = pattern.starts_with("!");
    if (negated) pattern.erase(0, 1);
    // Patterns may be written relative to the workspace or as absolute paths inside it.
    std::string root = workspace.string() + "/";
    if (pattern.starts_with(root)) pattern.erase(0, root.size());
    if (pattern.starts_with("./")) pattern.erase(0, 2);
    cleaned.push_back((negated ? "!" : "") + pattern);
  }
  auto filter = workflow::FilterList::compile(cleaned);
  if (!filter) return std::unexpected(filter.error());

  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           workspace, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string relative = std::filesystem::relative(it->path(), workspace, ec).generic_string();
    if (filter->matches(relative)) files.push_back(relative);
  }
  if (files.empty()) return std::string{};
  std::sort(files.begin(), files.end());
  Sha256 total;
  for (const auto& file : files) {
    std::ifstream in(workspace / file, std::ios::binary);
    if (!in) return make_error(ErrorCode::io_error, fmt::format("hashFiles: cannot read {}", file));
    Sha256 one;
    char buffer[64 * 1024];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0)
      one.update(buffer, static_cast<size_t>(in.gcount()));
    auto digest = one.raw();
    total.update(digest.data(), digest.size());
  }
  return hex(total.raw());
}

}  // namespace kiln::engine
