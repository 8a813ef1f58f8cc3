#include "kiln/hipcheck/api_table.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace kiln::hipcheck {
namespace {

TEST(ApiTable, GeneratedRowsAreSortedUniqueAndNeverIdentity) {
  const ApiTable& table = ApiTable::instance();
  auto entries = table.entries();
  ASSERT_GT(entries.size(), 8000u);
  for (std::size_t i = 1; i < entries.size(); ++i)
    EXPECT_LT(std::string_view(entries[i - 1].cuda_name), std::string_view(entries[i].cuda_name));
  for (const ApiEntry& e : entries) {
    EXPECT_NE(std::string_view(e.cuda_name), std::string_view(e.hip_name));
    EXPECT_EQ(table.lookup(e.cuda_name), &e) << e.cuda_name;
  }
}

TEST(ApiTable, ClassifiesKnownNames) {
  const ApiTable& table = ApiTable::instance();
  const ApiEntry* malloc = table.lookup("cudaMalloc");
  ASSERT_NE(malloc, nullptr);
  EXPECT_STREQ(malloc->hip_name, "hipMalloc");
  EXPECT_EQ(malloc->library, Library::runtime);
  EXPECT_STREQ(malloc->deprecated, "");

  const ApiEntry* thread_exit = table.lookup("cudaThreadExit");
  ASSERT_NE(thread_exit, nullptr);
  EXPECT_STREQ(thread_exit->hip_name, "hipDeviceReset");
  EXPECT_STREQ(thread_exit->deprecated, "10.0");

  const ApiEntry* bind = table.lookup("cudaBindTexture");
  ASSERT_NE(bind, nullptr);
  EXPECT_STREQ(bind->removed, "12.0");
  EXPECT_TRUE(bind->hip_deprecated);

  const ApiEntry* flush = table.lookup("cudaDeviceFlushGPUDirectRDMAWrites");
  ASSERT_NE(flush, nullptr);
  EXPECT_STREQ(flush->hip_name, "");

  ASSERT_NE(table.lookup("cublasSgemm"), nullptr);
  EXPECT_EQ(table.lookup("cublasSgemm")->library, Library::cublas);
  EXPECT_EQ(table.lookup("cusparseCreate")->library, Library::cusparse);
  EXPECT_EQ(table.lookup("nvrtcCompileProgram")->library, Library::rtc);

  // Same name in CUDA and HIP: not residual CUDA, so not in the table.
  EXPECT_EQ(table.lookup("__syncthreads"), nullptr);
  EXPECT_EQ(table.lookup("cudaMallocc"), nullptr);
  EXPECT_EQ(table.lookup("cudaMallo"), nullptr);
  EXPECT_EQ(table.lookup(""), nullptr);
  EXPECT_EQ(table.lookup("x"), nullptr);
}

// The generated table says what the Markdown says: every row of every table, re-read here
// independently, is either a same-name row (left out) or present with its HIP name. A few types
// appear in two tables; the table keeps one of their rows.
TEST(ApiTable, MatchesTheMarkdownTables) {
  namespace fs = std::filesystem;
  const ApiTable& table = ApiTable::instance();
  std::map<std::string, std::set<std::string>> hip_names;
  std::size_t rows = 0;
  for (const auto& entry :
       fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "third_party/hipify")) {
    if (!entry.path().string().ends_with("_HIP.md")) continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("|`")) continue;
      std::vector<std::string> cells;
      std::stringstream ss(line.substr(1));
      for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(cell);
      ASSERT_GE(cells.size(), 6u) << line;
      std::string cuda = cells[0].substr(1, cells[0].size() - 2);
      std::string hip = cells[5].size() >= 2 ? cells[5].substr(1, cells[5].size() - 2) : "";
      ++rows;
      if (cuda == hip) {
        EXPECT_EQ(table.lookup(cuda), nullptr) << cuda;
        continue;
      }
      hip_names[cuda].insert(hip);
    }
  }
  EXPECT_GT(rows, 8500u);
  EXPECT_EQ(hip_names.size(), table.entries().size());
  for (const auto& [cuda, names] : hip_names) {
    const ApiEntry* e = table.lookup(cuda);
    ASSERT_NE(e, nullptr) << cuda;
    EXPECT_TRUE(names.contains(e->hip_name)) << cuda << " -> " << e->hip_name;
  }
}

TEST(ApiTable, LicenceNoticeTravelsWithTheData) {
  std::ifstream in(std::filesystem::path(KILN_SOURCE_DIR) / "third_party/hipify/LICENSE.txt");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("Permission is hereby granted, free of charge"), std::string::npos);
  EXPECT_NE(text.find("Advanced Micro Devices"), std::string::npos);
}

}  // namespace
}  // namespace kiln::hipcheck
