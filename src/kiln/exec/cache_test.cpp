#include "kiln/exec/cache.h"

#include <gtest/gtest.h>

#include "kiln/exec/actions.h"
#include "kiln/exec/actions_support.h"
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

// Each "job" gets a fresh workspace; the cache root is shared, as between runs.
class CacheTest : public ::testing::Test {
 protected:
  RecordingContext& job(const std::string& name) {
    jobs_.push_back(std::make_unique<RecordingContext>(temp_.path() / name));
    jobs_.back()->context.cache_root = temp_.path() / "cache";
    return *jobs_.back();
  }
  ActionResult run(std::string_view uses, const std::map<std::string, std::string>& with,
                   RecordingContext& job) {
    auto result = run_builtin_action(uses, with, job.context);
    EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().message);
    return result ? *result : ActionResult{};
  }
  ActionResult post(const ActionResult& main, RecordingContext& job) {
    EXPECT_TRUE(main.post.has_value());
    if (!main.post) return {};
    auto result = run_post_action(*main.post, job.context);
    EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().message);
    return result ? *result : ActionResult{};
  }
  // Restores (actions/cache), writes `content` to deps/lib.txt on a miss, then runs the post.
  ActionResult cache_job(const std::string& name, const std::string& key,
                         const std::string& content, const std::string& restore_keys = "") {
    auto& j = job(name);
    std::map<std::string, std::string> with{{"path", "deps"}, {"key", key}};
    if (!restore_keys.empty()) with["restore-keys"] = restore_keys;
    auto result = run("actions/cache@v4", with, j);
    EXPECT_TRUE(result.success) << result.error;
    write_file(j.context.workspace / "deps/lib.txt", content);
    if (result.post) post(result, j);
    return result;
  }

  TempDir temp_;
  std::vector<std::unique_ptr<RecordingContext>> jobs_;
};

TEST_F(CacheTest, MissSavesAtTheEndAndTheNextJobHits) {
  auto& first = job("job1");
  write_file(first.context.workspace / "deps/lib.txt", "built once");
  write_file(first.context.workspace / "deps/sub/.hidden", "dot files are cached too");
  auto miss = run("actions/cache@v4", {{"path", "deps"}, {"key", "deps-v1"}}, first);
  ASSERT_TRUE(miss.success) << miss.error;
  EXPECT_EQ(output_of(miss, "cache-hit"), "<unset>");  // GitHub sets it only when found
  ASSERT_TRUE(miss.post.has_value());
  EXPECT_FALSE(miss.post->always);
  EXPECT_TRUE(first.logged("Cache not found for input keys: deps-v1")) << first.log_text();
  auto saved = post(miss, first);
  EXPECT_TRUE(saved.success) << saved.error;
  EXPECT_TRUE(first.logged("Cache saved with key: deps-v1")) << first.log_text();

  auto& second = job("job2");
  auto hit = run("actions/cache@v4", {{"path", "deps"}, {"key", "deps-v1"}}, second);
  ASSERT_TRUE(hit.success) << hit.error;
  EXPECT_EQ(output_of(hit, "cache-hit"), "true");
  EXPECT_FALSE(hit.post.has_value());  // an exact hit is not saved again
  EXPECT_EQ(read_file(second.context.workspace / "deps/lib.txt"), "built once");
  EXPECT_EQ(read_file(second.context.workspace / "deps/sub/.hidden"), "dot files are cached too");
}

TEST_F(CacheTest, RestoreKeysTakeTheNewestPrefixMatch) {
  cache_job("job1", "deps-linux-aaa", "first");
  cache_job("job2", "deps-linux-bbb", "second");
  cache_job("job3", "other-ccc", "unrelated");

  auto& j = job("job4");
  auto result =
      run("actions/cache@v4",
          {{"path", "deps"}, {"key", "deps-linux-ddd"}, {"restore-keys", "deps-linux-\ndeps-"}}, j);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(output_of(result, "cache-hit"), "false");
  EXPECT_EQ(read_file(j.context.workspace / "deps/lib.txt"), "second");
  ASSERT_TRUE(result.post.has_value());  // saved under the new key at the end
  EXPECT_EQ(result.post->state.at("key"), "deps-linux-ddd");
}

TEST_F(CacheTest, RestoreKeysAreTriedInOrderAndExactMatchesFirst) {
  cache_job("job1", "deps-", "exact restore key");
  cache_job("job2", "deps-newer", "newer prefix match");
  cache_job("job3", "zzz-1", "z");

  auto& j = job("job4");
  auto result = run("actions/cache/restore@v4",
                    {{"path", "deps"}, {"key", "nothing"}, {"restore-keys", "zzz-\ndeps-"}}, j);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(read_file(j.context.workspace / "deps/lib.txt"), "z");
  EXPECT_EQ(output_of(result, "cache-matched-key"), "zzz-1");
  EXPECT_EQ(output_of(result, "cache-primary-key"), "nothing");
  EXPECT_FALSE(result.post.has_value());  // cache/restore never saves

  auto& k = job("job5");
  auto exact = run("actions/cache/restore@v4",
                   {{"path", "deps"}, {"key", "nothing"}, {"restore-keys", "deps-"}}, k);
  EXPECT_EQ(output_of(exact, "cache-matched-key"), "deps-");
  EXPECT_EQ(output_of(exact, "cache-hit"), "false");
  EXPECT_EQ(read_file(k.context.workspace / "deps/lib.txt"), "exact restore key");
}

TEST_F(CacheTest, TheKeyItselfAlsoMatchesAsAPrefix) {
  cache_job("job1", "deps-linux-123", "old");
  auto& j = job("job2");
  auto result = run("actions/cache@v4", {{"path", "deps"}, {"key", "deps-linux"}}, j);
  EXPECT_EQ(output_of(result, "cache-hit"), "false");
  EXPECT_EQ(read_file(j.context.workspace / "deps/lib.txt"), "old");
}

TEST_F(CacheTest, KeysCannotEscapeTheCacheRoot) {
  const std::string key = "../../escape/../x/..";
  cache_job("job1", key, "payload");
  fs::path cache = temp_.path() / "cache";
  // Everything the save wrote is inside the cache root; nothing appeared beside it.
  for (const auto& entry : fs::recursive_directory_iterator(temp_.path())) {
    if (entry.path().filename() == "escape" || entry.path().filename() == "x") {
      ADD_FAILURE() << "the key leaked into a path: " << entry.path();
    }
  }
  auto top = list_files(temp_.path());
  for (const auto& file : top) {
    EXPECT_TRUE(file.starts_with("cache/") || file.starts_with("job1/")) << file;
  }
  auto& j = job("job2");
  auto hit = run("actions/cache@v4", {{"path", "deps"}, {"key", key}}, j);
  EXPECT_EQ(output_of(hit, "cache-hit"), "true");
  EXPECT_EQ(read_file(j.context.workspace / "deps/lib.txt"), "payload");
}

TEST_F(CacheTest, InvalidKeysFail) {
  auto& j = job("job1");
  auto comma = run("actions/cache@v4", {{"path", "deps"}, {"key", "a,b"}}, j);
  EXPECT_FALSE(comma.success);
  EXPECT_NE(comma.error.find("cannot contain commas"), std::string::npos) << comma.error;
  auto long_key = run("actions/cache@v4", {{"path", "deps"}, {"key", std::string(513, 'k')}}, j);
  EXPECT_FALSE(long_key.success);
  auto no_key = run("actions/cache@v4", {{"path", "deps"}}, j);
  EXPECT_FALSE(no_key.success);
  EXPECT_NE(no_key.error.find("key"), std::string::npos);
  // The index is JSON: a key that is not UTF-8 threw nlohmann::json's type_error when saved.
  auto bytes = run("actions/cache@v4", {{"path", "deps"}, {"key", "deps-\xff\xfe"}}, j);
  EXPECT_FALSE(bytes.success);
  EXPECT_NE(bytes.error.find("not valid UTF-8"), std::string::npos) << bytes.error;
  EXPECT_TRUE(
      run("actions/cache@v4", {{"path", "deps"}, {"key", "deps-\u00e9-\u4e2d"}}, j).success);
}

TEST_F(CacheTest, AnotherPathListIsAnotherCache) {
  cache_job("job1", "k", "content");
  auto& j = job("job2");
  auto result = run("actions/cache@v4", {{"path", "deps\nmore"}, {"key", "k"}}, j);
  EXPECT_EQ(output_of(result, "cache-hit"), "<unset>");
  EXPECT_FALSE(fs::exists(j.context.workspace / "deps/lib.txt"));
}

TEST_F(CacheTest, SavingAnExistingKeyWarnsAndKeepsTheEntry) {
  cache_job("job1", "same", "original");
  auto& j = job("job2");
  write_file(j.context.workspace / "deps/lib.txt", "changed");
  auto saved = run("actions/cache/save@v4", {{"path", "deps"}, {"key", "same"}}, j);
  EXPECT_TRUE(saved.success);
  EXPECT_TRUE(j.logged("already exists")) << j.log_text();

  auto& k = job("job3");
  run("actions/cache/restore@v4", {{"path", "deps"}, {"key", "same"}}, k);
  EXPECT_EQ(read_file(k.context.workspace / "deps/lib.txt"), "original");
  CacheStore store(temp_.path() / "cache");
  auto entries = store.entries();
  ASSERT_TRUE(entries.has_value());
  EXPECT_EQ(entries->size(), 1u);
}

TEST_F(CacheTest, FailOnCacheMissAndLookupOnly) {
  auto& j = job("job1");
  auto failed = run("actions/cache@v4",
                    {{"path", "deps"}, {"key", "absent"}, {"fail-on-cache-miss", "true"}}, j);
  EXPECT_FALSE(failed.success);
  EXPECT_NE(failed.error.find("fail-on-cache-miss"), std::string::npos) << failed.error;

  cache_job("job2", "present", "content");
  auto& k = job("job3");
  auto lookup =
      run("actions/cache@v4", {{"path", "deps"}, {"key", "present"}, {"lookup-only", "true"}}, k);
  EXPECT_EQ(output_of(lookup, "cache-hit"), "true");
  EXPECT_FALSE(fs::exists(k.context.workspace / "deps"));  // nothing restored
}

TEST_F(CacheTest, NothingToSaveWarns) {
  auto& j = job("job1");
  auto result = run("actions/cache/save@v4", {{"path", "does-not-exist"}, {"key", "k"}}, j);
  EXPECT_TRUE(result.success);
  EXPECT_TRUE(j.logged("Path Validation Error")) << j.log_text();
  CacheStore store(temp_.path() / "cache");
  auto found = store.find({"k"}, cache_version({"does-not-exist"}));
  ASSERT_TRUE(found.has_value());
  EXPECT_FALSE(found->has_value());
}

TEST_F(CacheTest, PathsOutsideTheWorkspaceUseHome) {
  fs::path home1 = temp_.path() / "home1";
  auto& j = job("job1");
  j.context.env["HOME"] = home1.string();
  write_file(home1 / ".cache/tool/data", "from home");
  auto miss = run("actions/cache@v4", {{"path", "~/.cache/tool"}, {"key", "home"}}, j);
  post(miss, j);
  fs::remove_all(home1 / ".cache");

  fs::path home2 = temp_.path() / "home2";
  auto& k = job("job2");
  k.context.env["HOME"] = home2.string();
  // Same pattern text, so the same cache; absolute paths are restored where they were.
  auto hit = run("actions/cache@v4", {{"path", "~/.cache/tool"}, {"key", "home"}}, k);
  EXPECT_EQ(output_of(hit, "cache-hit"), "true");
  EXPECT_EQ(read_file(home1 / ".cache/tool/data"), "from home");
}

TEST_F(CacheTest, SaveAlwaysMarksThePostStep) {
  auto& j = job("job1");
  auto result =
      run("actions/cache@v4", {{"path", "deps"}, {"key", "k"}, {"save-always", "true"}}, j);
  ASSERT_TRUE(result.post.has_value());
  EXPECT_TRUE(result.post->always);
  EXPECT_EQ(result.post->uses, "actions/cache@v4");
}

TEST(CacheStoreTest, FindPrefersExactThenNewestPrefixPerKey) {
  TempDir temp;
  CacheStore store(temp.path());
  auto fill = [](const fs::path& dir) -> Result<CopyStats> {
    write_file(dir / "workspace/f", "x");
    return CopyStats{1, 1};
  };
  for (const char* key : {"a-1", "a-2", "a", "b-1"}) {
    auto saved = store.save(key, "v", fill);
    ASSERT_TRUE(saved.has_value());
    EXPECT_EQ(*saved, CacheStore::SaveOutcome::saved);
  }
  EXPECT_EQ(*store.save("a-1", "v", fill), CacheStore::SaveOutcome::already_exists);
  EXPECT_EQ((*store.find({"a"}, "v"))->key, "a");
  EXPECT_EQ((*store.find({"a-"}, "v"))->key, "a-2");
  EXPECT_EQ((*store.find({"zz", "b"}, "v"))->key, "b-1");
  EXPECT_FALSE(store.find({"a"}, "other-version")->has_value());
  EXPECT_EQ(store.entries()->size(), 4u);
}

}  // namespace
}  // namespace kiln::exec
