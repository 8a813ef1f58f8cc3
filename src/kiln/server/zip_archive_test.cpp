// write_zip: what is written reads back with libzip as the same tree (names, contents, empty
// directories), links are left out, and an empty directory gives a valid empty zip.

#include "kiln/server/zip_archive.h"

#include <zip.h>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

class ZipArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln-zip-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& relative, const std::string& text) {
    fs::create_directories((dir_ / "in" / relative).parent_path());
    std::ofstream(dir_ / "in" / relative, std::ios::binary) << text;
  }
  // Every entry of the zip: name -> contents ("<dir>" for a directory entry).
  std::map<std::string, std::string> read_back(const fs::path& zip_path) {
    std::map<std::string, std::string> entries;
    int code = 0;
    zip_t* archive = zip_open(zip_path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
    EXPECT_NE(archive, nullptr) << "libzip error " << code;
    if (!archive) return entries;
    for (zip_int64_t i = 0; i < zip_get_num_entries(archive, 0); ++i) {
      zip_stat_t stat;
      zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &stat);
      std::string name = stat.name;
      if (name.ends_with("/")) {
        entries[name] = "<dir>";
        continue;
      }
      std::string data(stat.size, '\0');
      zip_file_t* file = zip_fopen_index(archive, static_cast<zip_uint64_t>(i), 0);
      EXPECT_EQ(zip_fread(file, data.data(), stat.size), static_cast<zip_int64_t>(stat.size));
      zip_fclose(file);
      entries[name] = data;
    }
    zip_close(archive);
    return entries;
  }
  fs::path dir_;
};

TEST_F(ZipArchiveTest, TheTreeReadsBack) {
  write("report.txt", "all good\n");
  write("logs/build/out.log", std::string(100000, 'x'));
  fs::create_directories(dir_ / "in" / "empty");
  fs::create_symlink("/etc/passwd", dir_ / "in" / "link");
  auto written = write_zip(dir_ / "in", dir_ / "a.zip");
  ASSERT_TRUE(written) << written.error().message;
  auto entries = read_back(dir_ / "a.zip");
  EXPECT_EQ(entries["report.txt"], "all good\n");
  EXPECT_EQ(entries["logs/build/out.log"], std::string(100000, 'x'));
  EXPECT_EQ(entries["empty/"], "<dir>");
  EXPECT_FALSE(entries.contains("link"));
  // Deflated: the repetitive log is far smaller than its 100 kB.
  EXPECT_LT(fs::file_size(dir_ / "a.zip"), 10000u);
}

TEST_F(ZipArchiveTest, AnEmptyDirectoryIsAnEmptyZip) {
  auto written = write_zip(dir_ / "in", dir_ / "empty.zip");
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_TRUE(read_back(dir_ / "empty.zip").empty());
  EXPECT_EQ(fs::file_size(dir_ / "empty.zip"), 22u);
}

TEST_F(ZipArchiveTest, AMissingDirectoryIsAnError) {
  auto written = write_zip(dir_ / "nope", dir_ / "x.zip");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().code, ErrorCode::io_error);
}

}  // namespace
}  // namespace kiln::server
