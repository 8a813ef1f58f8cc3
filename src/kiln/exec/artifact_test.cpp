#include "kiln/exec/artifact.h"

#include <gtest/gtest.h>

#include "kiln/exec/actions.h"
#include "kiln/exec/actions_test_support.h"

namespace kiln::exec {
namespace {

namespace fs = std::filesystem;
using testing::list_files;
using testing::output_of;
using testing::read_file;
using testing::RecordingContext;
using testing::TempDir;
using testing::write_file;
using Strings = std::vector<std::string>;

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    recording_ = std::make_unique<RecordingContext>(temp_.path());
    ws_ = recording_->context.workspace;
  }
  ActionResult run(std::string_view uses, const std::map<std::string, std::string>& with) {
    auto result = run_builtin_action(uses, with, recording_->context);
    EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().message);
    return result ? *result : ActionResult{};
  }
  ActionResult upload(const std::map<std::string, std::string>& with) {
    return run("actions/upload-artifact@v4", with);
  }
  ActionResult download(const std::map<std::string, std::string>& with) {
    return run("actions/download-artifact@v4", with);
  }
  fs::path stored(std::string_view name) { return recording_->context.artifact_root / name; }

  TempDir temp_;
  std::unique_ptr<RecordingContext> recording_;
  fs::path ws_;
};

TEST_F(ArtifactTest, DirectoryWithExclusionsRoundTrips) {
  write_file(ws_ / "build/bin/app", "binary");
  write_file(ws_ / "build/bin/app.tmp", "temp");
  write_file(ws_ / "build/logs/run.log", "log");
  auto result = upload({{"name", "build"}, {"path", "build/\n!**/*.tmp\n"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(list_files(stored("build")), (Strings{"bin/app", "logs/run.log"}));
  ASSERT_EQ(result.artifacts_uploaded.size(), 1u);
  const auto& info = result.artifacts_uploaded[0];
  EXPECT_EQ(info.name, "build");
  EXPECT_EQ(info.path, stored("build"));
  EXPECT_EQ(info.files, 2u);
  EXPECT_EQ(info.size, 9u);  // "binary" + "log"
  EXPECT_EQ(output_of(result, "artifact-id"), artifact_id("build"));

  auto fetched = download({{"name", "build"}, {"path", "restored"}});
  ASSERT_TRUE(fetched.success) << fetched.error;
  EXPECT_EQ(list_files(ws_ / "restored"), (Strings{"bin/app", "logs/run.log"}));
  EXPECT_EQ(read_file(ws_ / "restored/bin/app"), "binary");
  EXPECT_EQ(output_of(fetched, "download-path"), (ws_ / "restored").string());
}

TEST_F(ArtifactTest, MultiplePathsAreLaidOutFromTheirCommonAncestor) {
  write_file(ws_ / "path/output/bin/tool", "t");
  write_file(ws_ / "path/output/test-results/r.xml", "r");
  write_file(ws_ / "path/output/other/skip", "s");
  auto result =
      upload({{"name", "multi"}, {"path", "path/output/bin/\npath/output/test-results\n"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(list_files(stored("multi")), (Strings{"bin/tool", "test-results/r.xml"}));
}

TEST_F(ArtifactTest, WildcardKeepsTheHierarchyAfterTheFirstWildcard) {
  write_file(ws_ / "path/to/some/directory/foo1.txt", "1");
  write_file(ws_ / "path/to/some/directory/foo2.txt", "2");
  write_file(ws_ / "path/to/other/directory/foo1.txt", "3");
  write_file(ws_ / "path/to/other/directory/bar.txt", "4");
  auto result = upload({{"name", "wild"}, {"path", "path/to/*/directory/foo?.txt"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(
      list_files(stored("wild")),
      (Strings{"other/directory/foo1.txt", "some/directory/foo1.txt", "some/directory/foo2.txt"}));
}

TEST_F(ArtifactTest, SingleFileIsStoredUnderItsName) {
  write_file(ws_ / "path/to/artifact/world.txt", "hello");
  auto result = upload({{"path", "path/to/artifact/world.txt"}});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(list_files(stored("artifact")), (Strings{"world.txt"}));  // default name
}

TEST_F(ArtifactTest, NoFilesFoundModes) {
  auto warned = upload({{"name", "a"}, {"path", "missing/**"}});
  EXPECT_TRUE(warned.success);
  EXPECT_TRUE(warned.artifacts_uploaded.empty());
  EXPECT_TRUE(recording_->logged("warning: No files were found with the provided path: missing/**"))
      << recording_->log_text();
  EXPECT_FALSE(fs::exists(stored("a")));

  recording_->lines->clear();
  auto ignored = upload({{"name", "a"}, {"path", "missing"}, {"if-no-files-found", "ignore"}});
  EXPECT_TRUE(ignored.success);
  EXPECT_FALSE(recording_->logged("warning:")) << recording_->log_text();

  auto failed = upload({{"name", "a"}, {"path", "missing"}, {"if-no-files-found", "error"}});
  EXPECT_FALSE(failed.success);
  EXPECT_NE(failed.error.find("No files were found"), std::string::npos) << failed.error;

  auto bad = upload({{"name", "a"}, {"path", "missing"}, {"if-no-files-found", "maybe"}});
  EXPECT_FALSE(bad.success);
  EXPECT_NE(bad.error.find("if-no-files-found"), std::string::npos) << bad.error;
}

TEST_F(ArtifactTest, DuplicateNameFailsUnlessOverwrite) {
  write_file(ws_ / "one.txt", "one");
  write_file(ws_ / "two.txt", "two");
  ASSERT_TRUE(upload({{"name", "dup"}, {"path", "one.txt"}}).success);
  auto again = upload({{"name", "dup"}, {"path", "two.txt"}});
  EXPECT_FALSE(again.success);
  EXPECT_NE(again.error.find("already exists"), std::string::npos) << again.error;
  EXPECT_EQ(list_files(stored("dup")), (Strings{"one.txt"}));

  auto replaced = upload({{"name", "dup"}, {"path", "two.txt"}, {"overwrite", "true"}});
  ASSERT_TRUE(replaced.success) << replaced.error;
  EXPECT_EQ(list_files(stored("dup")), (Strings{"two.txt"}));
  // No staging directories are left behind.
  EXPECT_EQ(list_artifacts(recording_->context.artifact_root), (Strings{"dup"}));
  EXPECT_EQ(std::distance(fs::directory_iterator(recording_->context.artifact_root),
                          fs::directory_iterator()),
            1);
}

TEST_F(ArtifactTest, HiddenFilesNeedIncludeHiddenFiles) {
  write_file(ws_ / "out/visible", "v");
  write_file(ws_ / "out/.env", "secret");
  write_file(ws_ / "out/.git/config", "c");
  ASSERT_TRUE(upload({{"name", "plain"}, {"path", "out"}}).success);
  EXPECT_EQ(list_files(stored("plain")), (Strings{"visible"}));
  ASSERT_TRUE(upload({{"name", "all"}, {"path", "out"}, {"include-hidden-files", "true"}}).success);
  EXPECT_EQ(list_files(stored("all")), (Strings{".env", ".git/config", "visible"}));
}

TEST_F(ArtifactTest, InvalidNamesAndInputs) {
  write_file(ws_ / "f", "x");
  auto slash = upload({{"name", "a/b"}, {"path", "f"}});
  EXPECT_FALSE(slash.success);
  EXPECT_NE(slash.error.find("'/'"), std::string::npos) << slash.error;
  EXPECT_FALSE(upload({{"name", ".."}, {"path", "f"}}).success);
  auto no_path = upload({{"name", "x"}});
  EXPECT_FALSE(no_path.success);
  EXPECT_NE(no_path.error.find("path"), std::string::npos);
  EXPECT_FALSE(upload({{"name", "x"}, {"path", "f"}, {"retention-days", "-1"}}).success);
  EXPECT_FALSE(upload({{"name", "x"}, {"path", "f"}, {"compression-level", "12"}}).success);
  auto retained = upload({{"name", "r"}, {"path", "f"}, {"retention-days", "5"}});
  ASSERT_EQ(retained.artifacts_uploaded.size(), 1u);
  EXPECT_EQ(retained.artifacts_uploaded[0].retention_days, 5);
}

TEST_F(ArtifactTest, DownloadMissingNameFails) {
  write_file(ws_ / "f", "x");
  ASSERT_TRUE(upload({{"name", "present"}, {"path", "f"}}).success);
  auto result = download({{"name", "absent"}});
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("Artifact not found for name: absent"), std::string::npos)
      << result.error;
  EXPECT_NE(result.error.find("present"), std::string::npos) << result.error;
}

TEST_F(ArtifactTest, DownloadAllPatternAndMerge) {
  write_file(ws_ / "a.txt", "a");
  write_file(ws_ / "b.txt", "b");
  write_file(ws_ / "c.txt", "c");
  ASSERT_TRUE(upload({{"name", "logs-linux"}, {"path", "a.txt"}}).success);
  ASSERT_TRUE(upload({{"name", "logs-mac"}, {"path", "b.txt"}}).success);
  ASSERT_TRUE(upload({{"name", "binary"}, {"path", "c.txt"}}).success);

  ASSERT_TRUE(download({{"path", "all"}}).success);
  EXPECT_EQ(list_files(ws_ / "all"),
            (Strings{"binary/c.txt", "logs-linux/a.txt", "logs-mac/b.txt"}));

  ASSERT_TRUE(download({{"path", "logs"}, {"pattern", "logs-*"}}).success);
  EXPECT_EQ(list_files(ws_ / "logs"), (Strings{"logs-linux/a.txt", "logs-mac/b.txt"}));

  ASSERT_TRUE(
      download({{"path", "merged"}, {"pattern", "logs-*"}, {"merge-multiple", "true"}}).success);
  EXPECT_EQ(list_files(ws_ / "merged"), (Strings{"a.txt", "b.txt"}));

  auto by_id = download({{"path", "by-id"}, {"artifact-ids", artifact_id("binary")}});
  ASSERT_TRUE(by_id.success) << by_id.error;
  EXPECT_EQ(list_files(ws_ / "by-id"), (Strings{"binary/c.txt"}));
}

TEST_F(ArtifactTest, DownloadFromAnotherRunIsRefused) {
  recording_->context.env["GITHUB_RUN_ID"] = "7";
  auto result = download({{"run-id", "6"}});
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("'6'"), std::string::npos) << result.error;
  EXPECT_TRUE(download({{"run-id", "7"}}).success);
}

}  // namespace
}  // namespace kiln::exec
