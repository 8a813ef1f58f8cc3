#include "kiln/workflow/model.h"

#include <gtest/gtest.h>

#include "kiln/workflow/diagnostic.h"

namespace kiln::workflow {
namespace {

TEST(Model, FindJobAndTrigger) {
  Workflow wf;
  for (const char* id : {"build", "test"}) {
    Job job;
    job.id = id;
    wf.jobs.push_back(job);
  }
  Trigger push;
  push.event = "push";
  Trigger dispatch;
  dispatch.event = "workflow_dispatch";
  wf.on = {push, dispatch};
  ASSERT_NE(wf.find_job("test"), nullptr);
  EXPECT_EQ(wf.find_job("test"), &wf.jobs[1]);
  EXPECT_EQ(wf.find_job("tes"), nullptr);
  EXPECT_EQ(wf.find_trigger("workflow_dispatch"), &wf.on[1]);
  EXPECT_EQ(wf.find_trigger("schedule"), nullptr);
}

TEST(Diagnostic, ToStringWithAndWithoutPlace) {
  Diagnostic located{Severity::error, {"a.yml", 3, 7}, "bad"};
  EXPECT_EQ(located.to_string(), "a.yml:3:7: error: bad");
  Diagnostic warning{Severity::warning, {"a.yml", 2, 0}, "odd"};
  EXPECT_EQ(warning.to_string(), "a.yml:2: warning: odd");
  Diagnostic nowhere{Severity::error, {}, "lost"};
  EXPECT_EQ(nowhere.to_string(), "error: lost");
}

TEST(Diagnostic, HasErrorsIgnoresWarnings) {
  Diagnostics diagnostics;
  EXPECT_FALSE(has_errors(diagnostics));
  diagnostics.push_back({Severity::warning, {}, "w"});
  EXPECT_FALSE(has_errors(diagnostics));
  diagnostics.push_back({Severity::error, {}, "e"});
  EXPECT_TRUE(has_errors(diagnostics));
}

TEST(Boxed, ReadsLikeAnOptionalAndCopiesItsValue) {
  Job job;
  EXPECT_FALSE(job.container);
  EXPECT_TRUE(job.container == std::nullopt);
  Container container;
  container.image.value = "ubuntu:24.04";
  job.container = container;
  ASSERT_TRUE(job.container.has_value());
  Job copy = job;
  copy.container->image.value = "rocm/pytorch";
  EXPECT_EQ(job.container->image.value, "ubuntu:24.04");  // a copy is its own value
  std::optional<Container> as_optional = copy.container;
  ASSERT_TRUE(as_optional);
  EXPECT_EQ(as_optional->image.value, "rocm/pytorch");
  job.container = std::optional<Container>{};
  EXPECT_FALSE(job.container);
  copy = job;
  EXPECT_FALSE(copy.container);
  // Absent sections cost one pointer each: the reason Boxed exists.
  EXPECT_EQ(sizeof(Boxed<Container>), sizeof(void*));
}

}  // namespace
}  // namespace kiln::workflow
