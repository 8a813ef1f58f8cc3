#include "kiln/gpu/labels.h"

#include <gtest/gtest.h>

namespace kiln::gpu {
namespace {

std::vector<std::string> values(const std::vector<GpuLabel>& labels) {
  std::vector<std::string> out;
  for (const auto& label : labels) out.push_back(label.value);
  return out;
}

TEST(GpuLabelMap, ExactAndPatternLabels) {
  GpuLabelMap map;
  ASSERT_TRUE(map.add("gpu-a100", {"gpu", "gpu-model:a100"}));
  ASSERT_TRUE(map.add("roc-gpu-mi200", {"gpu-vendor:amd", "gpu-arch:gfx90a"}));
  ASSERT_TRUE(map.add("linux.rocm.gpu.{arch}.{count}",
                      {"gpu:{count}", "gpu-vendor:amd", "gpu-arch:{arch}"}));
  SourceLocation where{"ci.yml", 4, 14};
  std::vector<GpuLabel> labels = {{"self-hosted", where}, {"Linux.ROCm.GPU.gfx942.2", where}};
  auto expanded = map.expand(labels);
  EXPECT_EQ(values(expanded), (std::vector<std::string>{"self-hosted", "gpu:2", "gpu-vendor:amd",
                                                        "gpu-arch:gfx942"}));
  EXPECT_EQ(expanded[2].where.line, 4);  // errors point at the workflow's label
  auto request = parse_gpu_request(expanded);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->to_string(), "gpu:2 gpu-vendor:amd gpu-arch:gfx942");

  std::vector<GpuLabel> a100 = {{"GPU-A100", where}};
  EXPECT_EQ(parse_gpu_request(map.expand(a100))->to_string(), "gpu:1 gpu-model:a100");
  // A label that only looks like a pattern's is left alone.
  std::vector<GpuLabel> other = {{"linux.rocm.gpu.gfx942", where}};
  EXPECT_EQ(values(map.expand(other)), std::vector<std::string>{"linux.rocm.gpu.gfx942"});
}

TEST(GpuLabelMap, BadMappingsAreErrorsAtTheConfigLine) {
  GpuLabelMap map;
  SourceLocation where{"kiln.yml", 7, 5};
  auto error = map.add("gpu-a100", {"gpu:two"}, where);
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().where.line, 7);
  EXPECT_FALSE(map.add("x.{arch", {"gpu"}, where));
  auto undefined = map.add("x.{arch}", {"gpu-arch:{count}"}, where);
  ASSERT_FALSE(undefined);
  EXPECT_EQ(undefined.error().message,
            "custom GPU label 'x.{arch}': 'gpu-arch:{count}' uses {count}, which the label does "
            "not define");
  EXPECT_FALSE(map.add("big-box", {"self-hosted"}, where));  // no GPU in it
  EXPECT_FALSE(map.add("gpu-a100", {}, where));
  EXPECT_TRUE(map.empty());
}

TEST(GpuLabelMap, ServedLabels) {
  GpuLabelMap map;
  ASSERT_TRUE(map.add("gpu-a100", {"gpu", "gpu-model:a100"}));
  ASSERT_TRUE(map.serve("rocm-{n}"));
  for (const char* label : {"self-hosted", "Linux", "ubuntu-latest", "ubuntu-22.04", "gpu", "gpu:2",
                            "gpu-vendor:amd", "gpu-mem:40G", "GPU-A100", "rocm-box"})
    EXPECT_TRUE(map.serves(label)) << label;
  for (const char* label : {"windows-latest", "macos-14", "gpu-h1OO", "ubuntu-", "rocm", "big-box"})
    EXPECT_FALSE(map.serves(label)) << label;
  EXPECT_FALSE(map.serve(""));
}

TEST(GpuLabelMap, CustomKindComposesWithACount) {
  GpuLabelMap map;
  SourceLocation config{"kiln.yml", 3, 15};
  ASSERT_TRUE(map.add("gpu-a100", {"gpu", "gpu-model:a100"}, config));
  ASSERT_TRUE(map.add("gpu-a100x4", {"gpu:4", "gpu-model:a100"}, config));
  SourceLocation where{"ci.yml", 4, 14};
  std::vector<GpuLabel> two = {{"gpu-a100", where}, {"gpu:2", where}};
  EXPECT_EQ(parse_gpu_request(map.expand(two))->to_string(), "gpu:2 gpu-model:a100");
  std::vector<GpuLabel> count_first = {{"gpu:2", where}, {"gpu-a100", where}};
  EXPECT_EQ(parse_gpu_request(map.expand(count_first))->to_string(), "gpu:2 gpu-model:a100");
  std::vector<GpuLabel> contradiction = {{"gpu-a100x4", where}, {"gpu:2", where}};
  auto request = parse_gpu_request(map.expand(contradiction));
  ASSERT_FALSE(request);
  EXPECT_EQ(request.error().message,
            "runs-on label 'gpu:2' contradicts 'gpu:4' of the host's label 'gpu-a100x4' "
            "(kiln.yml:3:15)");
  std::vector<GpuLabel> models = {{"gpu-a100", where}, {"gpu-model:h100", where}};
  auto other_model = parse_gpu_request(map.expand(models));
  ASSERT_FALSE(other_model);
  EXPECT_EQ(other_model.error().message,
            "runs-on label 'gpu-model:h100': gpu-model is already 'a100' from 'gpu-model:a100' of "
            "the host's label 'gpu-a100' (kiln.yml:3:15)");
}

}  // namespace
}  // namespace kiln::gpu
