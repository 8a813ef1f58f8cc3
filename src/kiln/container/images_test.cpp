#include "kiln/container/images.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/workflow/loader.h"

namespace kiln::container {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

WorkflowImages collect(std::string_view yaml) {
  auto loaded = workflow::load_workflow_text(yaml, "ci.yml");
  EXPECT_TRUE(loaded.workflow) << (loaded.diagnostics.empty() ? ""
                                                              : loaded.diagnostics[0].to_string());
  if (!loaded.workflow) return {};
  return collect_images(*loaded.workflow);
}

std::vector<std::string> images(const WorkflowImages& found) {
  std::vector<std::string> out;
  for (const auto& use : found.uses) out.push_back(use.image + " " + use.role);
  return out;
}

TEST(ContextsRead, RootNamesOnly) {
  EXPECT_THAT(contexts_read("ubuntu:22.04"), ElementsAre());
  EXPECT_THAT(contexts_read("${{ matrix.image }}"), ElementsAre("matrix"));
  EXPECT_THAT(contexts_read("reg/${{ format('{0}:{1}', matrix.name, inputs.tag) }}"),
              ElementsAre("matrix", "inputs"));
  // Properties, functions, literals and strings are not contexts.
  EXPECT_THAT(contexts_read("${{ Matrix.env.github == 'github' && true || fromJSON('x') }}"),
              ElementsAre("matrix"));
  EXPECT_THAT(contexts_read("${{ env.IMAGE }}${{ github.sha }}"), ElementsAre("env", "github"));
}

TEST(CollectImages, ContainersServicesAndDockerSteps) {
  auto found = collect(R"(on: push
jobs:
  build:
    runs-on: linux
    container: {image: "nvcr.io/nvidia/pytorch:24.05-py3"}
    services:
      db: {image: "postgres:16"}
    steps:
      - uses: docker://alpine:3.19
      - run: echo
)");
  EXPECT_THAT(images(found), ElementsAre("nvcr.io/nvidia/pytorch:24.05-py3 container",
                                         "postgres:16 service db", "alpine:3.19 docker:// step 1"));
  EXPECT_TRUE(found.unresolved.empty());
  EXPECT_EQ(found.uses[0].job, "build");
  EXPECT_EQ(found.uses[0].where.line, 5);
  // The docker:// step points at the image, past the scheme.
  EXPECT_EQ(found.uses[2].where.line, 9);
  EXPECT_EQ(found.uses[2].where.column, 15 + 9);  // "      - uses: " then "docker://"
}

TEST(CollectImages, MatrixExpressionsGiveOneImagePerCombination) {
  auto found = collect(R"(on: push
jobs:
  test:
    runs-on: linux
    strategy:
      matrix:
        cuda: ["12.4", "12.6"]
        include:
          - cuda: "12.6"
            extra: yes
    container: nvidia/cuda:${{ matrix.cuda }}-devel
    steps:
      - run: echo
  whole:
    runs-on: linux
    strategy:
      matrix:
        container: [{image: "a:1"}, "b:2", ""]
    container: ${{ matrix.container }}
    steps:
      - run: echo
)");
  EXPECT_THAT(images(found),
              ElementsAre("nvidia/cuda:12.4-devel container", "nvidia/cuda:12.6-devel container",
                          "a:1 container", "b:2 container"));
  EXPECT_TRUE(found.unresolved.empty());
}

TEST(CollectImages, ExpressionsKnownOnlyInARunAreReportedWithTheirPlace) {
  auto found = collect(R"(on: workflow_dispatch
jobs:
  a:
    runs-on: linux
    container: ${{ inputs.image }}
    steps:
      - run: echo
  b:
    runs-on: linux
    strategy:
      matrix: ${{ fromJSON(needs.setup.outputs.matrix) }}
    container: {image: "x:${{ matrix.tag }}"}
    steps:
      - run: echo
  c:
    runs-on: linux
    container: {image: "y:${{ matrix.tag }}"}
    steps:
      - run: echo
)");
  EXPECT_TRUE(found.uses.empty());
  ASSERT_EQ(found.unresolved.size(), 3u);
  EXPECT_EQ(found.unresolved[0].where.to_string(), "ci.yml:5:16");
  EXPECT_THAT(found.unresolved[0].reason, HasSubstr("inputs"));
  EXPECT_EQ(found.unresolved[1].job, "b");
  EXPECT_THAT(found.unresolved[1].reason, HasSubstr("matrix is written with expressions"));
  EXPECT_THAT(found.unresolved[2].reason, HasSubstr("the job has none"));
}

}  // namespace
}  // namespace kiln::container
