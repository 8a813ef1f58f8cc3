#include "kiln/store/records.h"

#include <gtest/gtest.h>

namespace kiln::store {
namespace {

TEST(Records, StatusNamesRoundTrip) {
  for (auto status : {RunStatus::queued, RunStatus::running, RunStatus::success, RunStatus::failure,
                      RunStatus::cancelled, RunStatus::interrupted}) {
    auto parsed = parse_run_status(to_string(status));
    ASSERT_TRUE(parsed) << to_string(status);
    EXPECT_EQ(*parsed, status);
  }
  for (auto status :
       {JobStatus::queued, JobStatus::waiting, JobStatus::running, JobStatus::success,
        JobStatus::failure, JobStatus::cancelled, JobStatus::skipped, JobStatus::interrupted}) {
    auto parsed = parse_job_status(to_string(status));
    ASSERT_TRUE(parsed) << to_string(status);
    EXPECT_EQ(*parsed, status);
  }
  for (auto conclusion :
       {Conclusion::success, Conclusion::failure, Conclusion::cancelled, Conclusion::skipped}) {
    EXPECT_EQ(*parse_conclusion(to_string(conclusion)), conclusion);
  }
  for (auto stream : {LogStream::out, LogStream::err, LogStream::system}) {
    EXPECT_EQ(*parse_log_stream(to_string(stream)), stream);
  }
}

TEST(Records, NamesAreTheStableLowercaseOnes) {
  EXPECT_EQ(to_string(RunStatus::interrupted), "interrupted");
  EXPECT_EQ(to_string(JobStatus::waiting), "waiting");
  EXPECT_EQ(to_string(Conclusion::skipped), "skipped");
  EXPECT_EQ(to_string(LogStream::out), "stdout");
  EXPECT_EQ(to_string(LogStream::err), "stderr");
}

TEST(Records, UnknownNamesAreInvalidInput) {
  auto status = parse_run_status("Running");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, ErrorCode::invalid_input);
  EXPECT_NE(status.error().message.find("'Running'"), std::string::npos);
  EXPECT_FALSE(parse_job_status("done"));
  EXPECT_FALSE(parse_conclusion("interrupted"));  // a status, never a conclusion
  EXPECT_FALSE(parse_log_stream(""));
}

TEST(Records, TerminalStates) {
  EXPECT_FALSE(is_terminal(RunStatus::queued));
  EXPECT_FALSE(is_terminal(RunStatus::running));
  EXPECT_TRUE(is_terminal(RunStatus::success));
  EXPECT_TRUE(is_terminal(RunStatus::interrupted));
  EXPECT_FALSE(is_terminal(JobStatus::waiting));
  EXPECT_TRUE(is_terminal(JobStatus::skipped));
  EXPECT_TRUE(is_terminal(JobStatus::cancelled));
}

}  // namespace
}  // namespace kiln::store
