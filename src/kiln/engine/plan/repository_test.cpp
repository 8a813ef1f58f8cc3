#include "kiln/engine/plan/repository.h"

#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

std::string error_of(std::string_view text) {
  auto payload = parse_event_file(text, "event.json");
  return payload ? "(parsed)" : payload.error().to_string();
}

TEST(EventFile, AWebhookPayloadParses) {
  auto payload = parse_event_file(
      R"({"action": "opened", "pull_request": {"number": 3, "head": {"ref": "x"}, "base": null},
          "inputs": {"a": "1"}, "repository": {"full_name": "o/r"}})",
      "event.json");
  ASSERT_TRUE(payload) << payload.error().to_string();
  EXPECT_EQ((*payload)["pull_request"]["number"], 3);
}

// make_event fills these in: of another shape they threw nlohmann::json's type_error.
TEST(EventFile, MembersKilnFillsInMustHaveTheirShape) {
  EXPECT_EQ(error_of(R"({"pull_request": "x"})"),
            "event.json: error: 'pull_request' must be an object, not string");
  EXPECT_EQ(error_of(R"({"pull_request": {"base": [1]}})"),
            "event.json: error: 'pull_request.base' must be an object, not array");
  EXPECT_EQ(error_of(R"({"inputs": 5})"),
            "event.json: error: 'inputs' must be an object, not number");
  EXPECT_EQ(error_of(R"({"ref": {}})"), "event.json: error: 'ref' must be a string, not object");
  EXPECT_EQ(error_of("[1]"), "event.json: error: the event file is not a JSON object");
  EXPECT_EQ(error_of(R"({"after": 1E400})"),
            "event.json: error: the event file is not a JSON object");
}

}  // namespace
}  // namespace kiln::engine
