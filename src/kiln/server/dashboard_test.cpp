#include "kiln/server/dashboard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string page() {
  const auto* index = dashboard_file_for("/");
  return index ? std::string(index->data) : std::string();
}

TEST(Dashboard, EmbedsEveryBuiltFileByteForByte) {
  const fs::path dist = fs::path(KILN_SOURCE_DIR) / "dashboard" / "dist";
  std::set<std::string> on_disk;
  for (const auto& entry : fs::recursive_directory_iterator(dist))
    if (entry.is_regular_file()) on_disk.insert(fs::relative(entry.path(), dist).generic_string());
  std::set<std::string> embedded;
  for (const auto& file : dashboard_files()) {
    embedded.insert(std::string(file.path));
    EXPECT_EQ(file.data, read_file(dist / file.path)) << file.path;
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_TRUE(embedded.contains("index.html"));
}

TEST(Dashboard, ThePageNamesOnlyEmbeddedAssets) {
  const std::string html = page();
  ASSERT_NE(html.find("<div id=\"app\">"), std::string::npos);
  std::regex asset(R"re((?:src|href)="(/ui/assets/[^"]+)")re");
  int found = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), asset);
       it != std::sregex_iterator(); ++it) {
    const std::string path = (*it)[1].str();
    const auto* file = dashboard_file_for(path);
    ASSERT_NE(file, nullptr) << path;
    EXPECT_EQ("/ui/" + std::string(file->path), path);
    ++found;
  }
  EXPECT_GE(found, 2) << "a script and a stylesheet";
  // No URL outside the server: the dashboard works without outside network.
  EXPECT_EQ(html.find("://"), std::string::npos);
}

TEST(Dashboard, ClientRoutesAnswerThePage) {
  const auto* index = dashboard_file_for("/");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->path, "index.html");
  for (const char* path : {"/ui", "/ui/", "/ui/runs/3", "/ui/gpus", "/ui/anything/else"})
    EXPECT_EQ(dashboard_file_for(path), index) << path;
}

TEST(Dashboard, MissingAssetsAndOtherPathsAreNotThePage) {
  EXPECT_EQ(dashboard_file_for("/ui/assets/missing.js"), nullptr);
  EXPECT_EQ(dashboard_file_for("/uix"), nullptr);
  EXPECT_EQ(dashboard_file_for("/api/runs"), nullptr);
  EXPECT_EQ(dashboard_file_for(""), nullptr);
}

TEST(Dashboard, ContentTypes) {
  EXPECT_EQ(content_type_of("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(content_type_of("assets/index-AbC.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_of("assets/index-AbC.css"), "text/css; charset=utf-8");
  EXPECT_EQ(content_type_of("logo.svg"), "image/svg+xml");
  EXPECT_EQ(content_type_of("blob"), "application/octet-stream");
}

}  // namespace
}  // namespace kiln::server
