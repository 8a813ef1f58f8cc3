#include "kiln/plan/matrix.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kiln::plan {
namespace {

using Json = nlohmann::ordered_json;

std::vector<Json> expand_ok(const char* text) {
  auto result = expand_matrix(Json::parse(text));
  EXPECT_TRUE(result) << text << ": " << (result ? "" : result.error().message);
  return result ? *result : std::vector<Json>{};
}

std::vector<std::string> dumps(const std::vector<Json>& combinations) {
  std::vector<std::string> out;
  for (const Json& c : combinations) out.push_back(c.dump());
  return out;
}

TEST(Matrix, SingleDimension) {
  auto jobs = expand_ok(R"({"version": [10, 12, 14]})");
  EXPECT_EQ(dumps(jobs), (std::vector<std::string>{R"({"version":10})", R"({"version":12})",
                                                   R"({"version":14})"}));
}

TEST(Matrix, FirstKeyVariesSlowest) {
  // "Using a matrix strategy": version [10, 12, 14] then os: jobs in this order.
  auto jobs = expand_ok(R"({"version": [10, 12, 14], "os": ["ubuntu-latest", "windows-latest"]})");
  EXPECT_EQ(dumps(jobs), (std::vector<std::string>{
                             R"({"version":10,"os":"ubuntu-latest"})",
                             R"({"version":10,"os":"windows-latest"})",
                             R"({"version":12,"os":"ubuntu-latest"})",
                             R"({"version":12,"os":"windows-latest"})",
                             R"({"version":14,"os":"ubuntu-latest"})",
                             R"({"version":14,"os":"windows-latest"})",
                         }));
}

TEST(Matrix, ObjectValues) {
  // "A variable configuration in a matrix can be an array of objects": 4 jobs.
  auto jobs = expand_ok(R"({"os": ["ubuntu-latest", "macos-latest"],
      "node": [{"version": 14}, {"version": 20, "env": "NODE_OPTIONS=--openssl-legacy-provider"}]})");
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs[0]["os"], "ubuntu-latest");
  EXPECT_EQ(jobs[0]["node"]["version"], 14);
  EXPECT_EQ(jobs[1]["node"]["env"], "NODE_OPTIONS=--openssl-legacy-provider");
  EXPECT_EQ(jobs[3]["os"], "macos-latest");
  EXPECT_EQ(jobs[3]["node"]["version"], 20);
}

TEST(Matrix, ExcludeIsPartialMatch) {
  // "Excluding matrix configurations": 12 combinations, minus one, minus two = nine jobs.
  auto jobs = expand_ok(R"({
      "os": ["macos-latest", "windows-latest"], "version": [12, 14, 16],
      "environment": ["staging", "production"],
      "exclude": [{"os": "macos-latest", "version": 12, "environment": "production"},
                  {"os": "windows-latest", "version": 16}]})");
  ASSERT_EQ(jobs.size(), 9u);
  for (const Json& job : jobs) {
    EXPECT_FALSE(job["os"] == "windows-latest" && job["version"] == 16) << job.dump();
    EXPECT_FALSE(job["os"] == "macos-latest" && job["version"] == 12 &&
                 job["environment"] == "production")
        << job.dump();
  }
}

TEST(Matrix, ExcludeComparesObjectsDeeply) {
  auto jobs = expand_ok(R"({"cfg": [{"cc": "gcc", "v": 12}, {"cc": "clang", "v": 16}],
      "mode": ["debug", "release"],
      "exclude": [{"cfg": {"cc": "clang", "v": 16}, "mode": "debug"}]})");
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[2].dump(), R"({"cfg":{"cc":"clang","v":16},"mode":"release"})");
  // An object that is only similar does not match.
  auto similar = expand_ok(R"({"cfg": [{"cc": "clang", "v": 16}],
      "exclude": [{"cfg": {"cc": "clang"}}]})");
  EXPECT_EQ(similar.size(), 1u);
}

TEST(Matrix, IncludeDocumentedExample) {
  // "Expanding or adding matrix configurations": the fruit/animal example, six jobs.
  auto jobs = expand_ok(R"({
      "fruit": ["apple", "pear"], "animal": ["cat", "dog"],
      "include": [{"color": "green"}, {"color": "pink", "animal": "cat"},
                  {"fruit": "apple", "shape": "circle"}, {"fruit": "banana"},
                  {"fruit": "banana", "animal": "cat"}]})");
  EXPECT_EQ(dumps(jobs), (std::vector<std::string>{
                             R"({"fruit":"apple","animal":"cat","color":"pink","shape":"circle"})",
                             R"({"fruit":"apple","animal":"dog","color":"green","shape":"circle"})",
                             R"({"fruit":"pear","animal":"cat","color":"pink"})",
                             R"({"fruit":"pear","animal":"dog","color":"green"})",
                             R"({"fruit":"banana"})",
                             R"({"fruit":"banana","animal":"cat"})",
                         }));
}

TEST(Matrix, IncludeAddsVariableToOneCombination) {
  // os × node with npm: 6 added only to windows-latest/16.
  auto jobs = expand_ok(R"({"os": ["windows-latest", "ubuntu-latest"], "node": [12, 14, 16],
      "include": [{"os": "windows-latest", "node": 16, "npm": 6}]})");
  ASSERT_EQ(jobs.size(), 6u);
  int with_npm = 0;
  for (const Json& job : jobs)
    if (job.contains("npm")) {
      ++with_npm;
      EXPECT_EQ(job["os"], "windows-latest");
      EXPECT_EQ(job["node"], 16);
      EXPECT_EQ(job["npm"], 6);
    }
  EXPECT_EQ(with_npm, 1);
}

TEST(Matrix, IncludeAddsNewCombination) {
  // 3 × 3 = 9, plus windows-latest/17 = 10 jobs.
  auto jobs = expand_ok(R"({"os": ["macos-latest", "windows-latest", "ubuntu-latest"],
      "version": [12, 14, 16], "include": [{"os": "windows-latest", "version": 17}]})");
  ASSERT_EQ(jobs.size(), 10u);
  EXPECT_EQ(jobs.back().dump(), R"({"os":"windows-latest","version":17})");
}

TEST(Matrix, PerlExampleHasSevenJobs) {
  auto jobs = expand_ok(R"({"os": ["ubuntu-latest"],
      "perl": ["5.16", "5.20", "5.26", "5.30", "latest"],
      "include": [{"os": "macos-latest", "perl": "5.26"}, {"os": "macos-latest", "perl": "latest"}]})");
  ASSERT_EQ(jobs.size(), 7u);
  EXPECT_EQ(jobs[5].dump(), R"({"os":"macos-latest","perl":"5.26"})");
}

TEST(Matrix, OnlyInclude) {
  auto jobs = expand_ok(R"({"include": [{"site": "production", "datacenter": "site-a"},
                                       {"site": "staging", "datacenter": "site-b"}]})");
  EXPECT_EQ(dumps(jobs), (std::vector<std::string>{R"({"site":"production","datacenter":"site-a"})",
                                                   R"({"site":"staging","datacenter":"site-b"})"}));
}

TEST(Matrix, IncludeRestoresExcluded) {
  // include is processed after exclude, so it can add an excluded combination back.
  auto jobs = expand_ok(R"({"os": ["a", "b"], "v": [1, 2], "exclude": [{"os": "b", "v": 2}],
      "include": [{"os": "b", "v": 2}]})");
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs.back().dump(), R"({"os":"b","v":2})");
}

TEST(Matrix, IncludeNeverOverwritesOriginalValues) {
  auto jobs = expand_ok(R"({"os": ["linux"], "include": [{"os": "linux", "arch": "x64"},
      {"arch": "arm64"}]})");
  // The second entry does not touch `os`, so it fits and overwrites the added `arch`.
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].dump(), R"({"os":"linux","arch":"arm64"})");
}

TEST(Matrix, Errors) {
  struct Bad {
    const char* matrix;
    const char* part;
  };
  const Bad bad[] = {
      {R"([1, 2])", "matrix must be an object"},
      {R"({"os": "linux"})", "matrix 'os' must be a list"},
      {R"({"os": []})", "matrix 'os' has no values"},
      {R"({"include": {"a": 1}})", "include must be a list"},
      {R"({"os": ["a"], "exclude": [1]})", "exclude entries must be objects"},
      {R"({"os": ["a"], "exclude": [{"os": "a"}]})", "no jobs"},
      {R"({})", "no jobs"},
      {R"({"include": []})", "no jobs"},
  };
  for (const Bad& b : bad) {
    auto result = expand_matrix(Json::parse(b.matrix));
    ASSERT_FALSE(result) << b.matrix;
    EXPECT_NE(result.error().message.find(b.part), std::string::npos)
        << b.matrix << " -> " << result.error().message;
  }
}

TEST(Matrix, JobLimit) {
  Json sixteen = Json::array();
  for (int i = 0; i < 16; ++i) sixteen.push_back(i);
  Json ok = {{"a", sixteen}, {"b", sixteen}};  // 256: the limit itself is allowed
  auto at_limit = expand_matrix(ok);
  ASSERT_TRUE(at_limit);
  EXPECT_EQ(at_limit->size(), 256u);
  Json over = ok;
  over["include"] = Json::array({{{"a", 99}}});
  auto too_many = expand_matrix(over);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message.find("257 jobs"), std::string::npos);
  // A huge product is refused before it is built.
  Json huge = Json::object();
  Json fifty = Json::array();
  for (int i = 0; i < 50; ++i) fifty.push_back(i);
  for (const char* key : {"a", "b", "c", "d", "e"}) huge[key] = fifty;
  EXPECT_FALSE(expand_matrix(huge));
  // ...but exclude may bring a larger product under the limit.
  Json trimmed = {{"a", sixteen}, {"b", sixteen}, {"c", {1, 2}}, {"exclude", {{{"c", 2}}}}};
  auto under = expand_matrix(trimmed);
  ASSERT_TRUE(under);
  EXPECT_EQ(under->size(), 256u);
}

TEST(Matrix, JobNames) {
  EXPECT_EQ(matrix_job_name("build", Json::parse(R"({"os": "linux", "python": 3.11})")),
            "build (linux, 3.11)");
  EXPECT_EQ(matrix_job_name("test", Json::parse(R"({"node": {"version": 20, "lts": true},
      "os": "macos-latest"})")),
            "test (20, true, macos-latest)");
  EXPECT_EQ(matrix_job_name("x", Json::parse(R"({"a": null, "b": "", "c": [1, "two"]})")),
            "x (1, two)");
  EXPECT_EQ(matrix_job_name("solo", Json::object()), "solo");
  EXPECT_EQ(matrix_values_text(Json::parse(R"({"v": 12, "f": false})")), "12, false");
}

}  // namespace
}  // namespace kiln::plan
