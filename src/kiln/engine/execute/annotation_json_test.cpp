#include "kiln/engine/execute/annotation_json.h"

#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

TEST(AnnotationJson, RoundTripsAndReadsAnOlderAgentsNumericLevel) {
  exec::Annotation note{.level = exec::AnnotationLevel::warning,
                        .message = "slow",
                        .title = "perf",
                        .file = "src/mm.cu",
                        .line = 3,
                        .end_line = 7,
                        .column = 2,
                        .end_column = 9};
  auto json = annotation_to_json(note);
  EXPECT_EQ(json["level"], "warning");
  EXPECT_EQ(annotation_from_json(json), note);
  json["level"] = 2;  // AnnotationLevel::notice as agents before this shape wrote it
  EXPECT_EQ(annotation_from_json(json).level, exec::AnnotationLevel::notice);
  json.erase("file");
  EXPECT_THROW(annotation_from_json(json), nlohmann::json::exception);
}

}  // namespace
}  // namespace kiln::engine
