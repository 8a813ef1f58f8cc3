// GPU usage sums from a real SQLite store, against hand counts of jobs with known times.

#include "kiln/report/usage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/store/sqlite_store.h"
#include "kiln/store/test_support.h"

namespace kiln::report {
namespace {

using ::testing::HasSubstr;

constexpr store::TimeMs k_hour = 3'600'000;
constexpr store::TimeMs k_day0 = 1'800'000'000'000;  // 2027-01-15T08:00:00Z

class UsageTest : public store::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    auto opened = store::open_sqlite_store(db_path());
    ASSERT_TRUE(opened) << opened.error().to_string();
    store_ = std::move(*opened);
  }

  std::int64_t run(const std::string& repository, const std::string& ref,
                   const std::string& workflow) {
    store::Run run;
    run.repository = repository;
    run.workflow_name = workflow;
    run.event = "push";
    run.ref = ref;
    run.created_at = k_day0;
    auto created = store_->create_run(run);
    EXPECT_TRUE(created);
    return created->id;
  }

  void job(std::int64_t run_id, const std::string& key, nlohmann::json labels,
           std::vector<std::string> models, store::TimeMs start, store::TimeMs hours_ms,
           nlohmann::json extra = nlohmann::json::object()) {
    store::Job job;
    job.run_id = run_id;
    job.key = key;
    job.workflow_job_id = key;
    job.labels = std::move(labels);
    nlohmann::json gpus = nlohmann::json::array();
    for (std::size_t i = 0; i < models.size(); ++i)
      gpus.push_back({{"index", i}, {"uuid", fmt::format("GPU-{}", i)}, {"model", models[i]}});
    extra["gpus"] = gpus;
    job.extra = std::move(extra);
    auto row = store_->create_job(job);
    ASSERT_TRUE(row);
    job.id = *row;
    job.status = store::JobStatus::success;
    job.conclusion = store::Conclusion::success;
    job.started_at = start;
    job.finished_at = start + hours_ms;
    ASSERT_TRUE(store_->update_job(job));
  }

  // The hand-counted fleet: 2 H200 for 1.5 h (3 GPU-h), 1 A100 for 0.5 h, sampled (watched
  // 0.5 h, busy 0.25 h, 300 Wh), a CPU job, a job reused from an earlier attempt and one from
  // before the period (neither counted).
  void fill() {
    const auto main_run = run("acme/kernels", "refs/heads/main", "CI");
    job(main_run, "train", {"linux", "gpu:2"}, {"NVIDIA H200", "NVIDIA H200"}, k_day0,
        k_hour * 3 / 2);
    job(main_run, "lint", {"linux"}, {}, k_day0, k_hour);
    const auto pr_run = run("acme/kernels", "refs/pull/7/head", "Bench");
    job(pr_run, "bench", {"linux", "gpu:1"}, {"NVIDIA A100-SXM4-80GB"}, k_day0 + 25 * k_hour,
        k_hour / 2,
        {{"gpu",
          {{"gpu_seconds_held", 1800.0}, {"gpu_seconds_busy", 900.0}, {"energy_wh", 300.0}}}});
    job(pr_run, "train", {"linux", "gpu:2"}, {"NVIDIA H200", "NVIDIA H200"}, k_day0 + 25 * k_hour,
        k_hour, {{"reused_from", {{"run", 1}, {"job", 1}}}});
    const auto old_run = run("acme/old", "refs/heads/main", "CI");
    job(old_run, "train", {"gpu:1"}, {"NVIDIA H200"}, k_day0 - 48 * k_hour, k_hour);
  }

  UsageRow row_of(const Usage& usage, const std::string& key) {
    for (const auto& row : usage.rows)
      if (row.key == key) return row;
    ADD_FAILURE() << "no row " << key;
    return {};
  }

  std::unique_ptr<store::Store> store_;
};

TEST_F(UsageTest, HeldHoursBusyEnergyAndCostByRepository) {
  fill();
  UsageQuery query{.since = k_day0 - k_hour,
                   .by = UsageBy::repository,
                   .prices = {{"H200", 4.0}, {"A100", 2.0}, {"A100-SXM4", 2.5}}};
  auto usage = report::usage(*store_, query);
  ASSERT_TRUE(usage) << usage.error().message;
  ASSERT_EQ(usage->rows.size(), 1u);  // acme/old's job is from before the period
  const auto& row = usage->rows[0];
  EXPECT_EQ(row.key, "acme/kernels");
  EXPECT_EQ(row.jobs, 3);
  EXPECT_EQ(row.gpu_jobs, 2);
  EXPECT_DOUBLE_EQ(row.gpu_hours_held, 3.5);  // 2 x 1.5 h + 0.5 h
  EXPECT_DOUBLE_EQ(row.gpu_hours_busy, 0.25);
  EXPECT_DOUBLE_EQ(row.sampled_hours, 0.5);
  EXPECT_DOUBLE_EQ(row.energy_kwh, 0.3);
  EXPECT_DOUBLE_EQ(row.cost, 3.0 * 4.0 + 0.5 * 2.5);  // the longest matching key prices A100
  EXPECT_DOUBLE_EQ(row.unpriced_hours, 0);
  EXPECT_DOUBLE_EQ(usage->total.gpu_hours_held, 3.5);
}

TEST_F(UsageTest, ByModelLabelBranchAndDay) {
  fill();
  UsageQuery query{.since = k_day0 - k_hour, .by = UsageBy::model, .prices = {{"h200", 4.0}}};
  auto by_model = report::usage(*store_, query);
  ASSERT_TRUE(by_model);
  EXPECT_DOUBLE_EQ(row_of(*by_model, "NVIDIA H200").gpu_hours_held, 3.0);
  EXPECT_DOUBLE_EQ(row_of(*by_model, "NVIDIA H200").cost, 12.0);  // keys ignore case
  EXPECT_DOUBLE_EQ(row_of(*by_model, "NVIDIA A100-SXM4-80GB").unpriced_hours, 0.5);
  EXPECT_EQ(row_of(*by_model, "(no GPU)").jobs, 1);
  EXPECT_DOUBLE_EQ(by_model->total.unpriced_hours, 0.5);

  query.by = UsageBy::label;
  auto by_label = report::usage(*store_, query);
  ASSERT_TRUE(by_label);
  EXPECT_EQ(row_of(*by_label, "linux").jobs, 3);  // a job counts under each of its labels
  EXPECT_DOUBLE_EQ(row_of(*by_label, "gpu:2").gpu_hours_held, 3.0);
  EXPECT_DOUBLE_EQ(by_label->total.gpu_hours_held, 3.5);  // the total counts each job once

  query.by = UsageBy::branch;
  auto by_branch = report::usage(*store_, query);
  ASSERT_TRUE(by_branch);
  EXPECT_DOUBLE_EQ(row_of(*by_branch, "main").gpu_hours_held, 3.0);
  EXPECT_DOUBLE_EQ(row_of(*by_branch, "pull/7").gpu_hours_held, 0.5);

  query.by = UsageBy::day;
  auto by_day = report::usage(*store_, query);
  ASSERT_TRUE(by_day);
  EXPECT_EQ(row_of(*by_day, "2027-01-15").jobs, 2);
  EXPECT_EQ(row_of(*by_day, "2027-01-16").jobs, 1);
}

TEST_F(UsageTest, TheTableAndJsonSayWhatHasNoPriceOrNoSamples) {
  fill();
  UsageQuery query{.since = k_day0 - k_hour, .by = UsageBy::model, .prices = {{"H200", 4.0}}};
  auto usage = report::usage(*store_, query);
  ASSERT_TRUE(usage);
  const auto table = format_usage(*usage, query);
  EXPECT_THAT(table, HasSubstr("MODEL"));
  EXPECT_THAT(table, HasSubstr("no price"));
  EXPECT_THAT(table, HasSubstr("0.50 GPU-hours on models without a price"));
  auto json = to_json(*usage, query);
  EXPECT_EQ(json["by"], "model");
  EXPECT_EQ(json["total"]["gpu_hours_held"], 3.5);
  for (const auto& row : json["rows"])
    if (row["key"] == "NVIDIA H200") {
      EXPECT_TRUE(row["gpu_hours_busy"].is_null());  // not sampled
    }
  EXPECT_FALSE(parse_usage_by("team"));
  query.since = k_day0 + 100 * k_hour;
  auto none = report::usage(*store_, query);
  ASSERT_TRUE(none);
  EXPECT_EQ(format_usage(*none, query), "no jobs in this period\n");
}

}  // namespace
}  // namespace kiln::report
