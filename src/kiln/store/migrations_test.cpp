#include "kiln/store/migrations.h"

#include <gtest/gtest.h>

#include <array>

#include "kiln/store/sqlite.h"
#include "kiln/store/test_support.h"

namespace kiln::store {
namespace {

class MigrationsTest : public testing::TempDirTest {
 protected:
  std::unique_ptr<sqlite::Database> open_db() {
    auto db = sqlite::Database::open(dir_ / "m.db", 1000);
    EXPECT_TRUE(db) << db.error().to_string();
    return std::move(*db);
  }
  static std::int64_t count_tables(sqlite::Database& db, std::string_view name) {
    auto statement =
        db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1");
    EXPECT_TRUE(statement);
    (*statement)->bind(1, name);
    EXPECT_TRUE(*(*statement)->step());
    return (*statement)->int64(0);
  }
};

TEST_F(MigrationsTest, EmptyDatabaseGetsTheWholeSchema) {
  auto db = open_db();
  auto before = migrate(*db, schema_migrations());
  ASSERT_TRUE(before) << before.error().to_string();
  EXPECT_EQ(*before, 0);
  EXPECT_EQ(*db->query_int("PRAGMA user_version"), latest_schema_version());
  EXPECT_GE(latest_schema_version(), 1);
  for (auto table : {"runs", "jobs", "steps", "log_chunks", "artifacts"}) {
    EXPECT_EQ(count_tables(*db, table), 1) << table;
  }
  // Current already: nothing to do, nothing changes.
  auto again = migrate(*db, schema_migrations());
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, latest_schema_version());
}

TEST_F(MigrationsTest, OlderDatabaseRunsOnlyTheMissingScripts) {
  constexpr std::array<Migration, 2> scripts = {
      "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);",
      "CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (2);"};
  auto db = open_db();
  ASSERT_TRUE(migrate(*db, std::span(scripts).first(1)));
  EXPECT_EQ(*db->query_int("PRAGMA user_version"), 1);
  EXPECT_EQ(*db->query_int("SELECT count(*) FROM a"), 1);

  auto before = migrate(*db, scripts);
  ASSERT_TRUE(before) << before.error().to_string();
  EXPECT_EQ(*before, 1);
  EXPECT_EQ(*db->query_int("PRAGMA user_version"), 2);
  // Script 1 did not run twice; script 2 ran once.
  EXPECT_EQ(*db->query_int("SELECT count(*) FROM a"), 2);
  EXPECT_EQ(count_tables(*db, "b"), 1);
}

TEST_F(MigrationsTest, FailingScriptLeavesTheOldVersionWhole) {
  constexpr std::array<Migration, 3> scripts = {
      "CREATE TABLE a (x INTEGER);", "CREATE TABLE b (y INTEGER);",
      "CREATE TABLE c (z INTEGER); INSERT INTO no_such_table VALUES (1);"};
  auto db = open_db();
  ASSERT_TRUE(migrate(*db, std::span(scripts).first(1)));
  auto failed = migrate(*db, scripts);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ErrorCode::io_error);
  EXPECT_NE(failed.error().message.find("schema version 3"), std::string::npos)
      << failed.error().message;
  EXPECT_NE(failed.error().message.find("no_such_table"), std::string::npos)
      << failed.error().message;
  // Neither b (script 2, which succeeded) nor c survive: one transaction for the whole step.
  EXPECT_EQ(*db->query_int("PRAGMA user_version"), 1);
  EXPECT_EQ(count_tables(*db, "b"), 0);
  EXPECT_EQ(count_tables(*db, "c"), 0);
}

// A store at version 12 with lines in it (one of them, the last given a seq, deleted) migrates to
// the log_chunks of version 13: every row kept as it was, the indexes, the AUTOINCREMENT counter
// and both foreign keys still there, the CHECK still refusing an unknown stream, and no
// ephemeral table in the insert any more.
TEST_F(MigrationsTest, LogChunksRebuiltWithEveryRowAndTheirSeqs) {
  auto db = open_db();
  ASSERT_GE(latest_schema_version(), 13);
  ASSERT_TRUE(migrate(*db, schema_migrations().first(12)));
  ASSERT_TRUE(db->exec(R"sql(
INSERT INTO runs (id, number, repository, workflow_path, workflow_name, event, ref, sha, status,
                  created_at, owner_pid, owner_start_time, owner_host)
  VALUES (1, 1, 'r', 'w.yml', 'w', 'push', 'refs/heads/main', 'abc', 'success', 1, 1, 1, 'h'),
         (2, 2, 'r', 'w.yml', 'w', 'push', 'refs/heads/main', 'abc', 'success', 1, 1, 1, 'h');
INSERT INTO jobs (id, run_id, key, workflow_job_id, name, status)
  VALUES (10, 1, 'a', 'a', 'a', 'success'), (20, 2, 'b', 'b', 'b', 'success');
INSERT INTO log_chunks (run_id, job_id, step_index, stream, text, time)
  VALUES (1, 10, 0, 'stdout', 'one', 100), (1, 10, NULL, 'system', 'two ünï', 101),
         (2, 20, 1, 'stderr', '', 102), (2, 20, 1, 'stdout', 'last', 103);
DELETE FROM log_chunks WHERE text = 'last';
)sql"));
  auto dump = [&] {
    auto statement = db->prepare(
        "SELECT seq, run_id, job_id, coalesce(step_index, -1), stream, text, time "
        "FROM log_chunks ORDER BY seq");
    EXPECT_TRUE(statement);
    std::string rows;
    while (*(*statement)->step()) {
      for (int column = 0; column < 7; ++column) rows += (*statement)->text(column) + "|";
      rows += "\n";
    }
    return rows;
  };
  const std::string before = dump();
  ASSERT_EQ(before,
            "1|1|10|0|stdout|one|100|\n2|1|10|-1|system|two ünï|101|\n3|2|20|1|stderr||102|\n");
  auto insert_plan_has_ephemeral = [&] {
    auto statement = db->prepare(
        "EXPLAIN INSERT INTO log_chunks (run_id, job_id, step_index, stream, text, time) "
        "VALUES (1, 10, 0, 'stdout', 'x', 1)");
    EXPECT_TRUE(statement);
    bool found = false;
    while (*(*statement)->step()) found = found || (*statement)->text(1) == "OpenEphemeral";
    return found;
  };
  EXPECT_TRUE(insert_plan_has_ephemeral());

  auto migrated = migrate(*db, schema_migrations());
  ASSERT_TRUE(migrated) << migrated.error().to_string();
  EXPECT_EQ(*migrated, 12);
  EXPECT_EQ(dump(), before);
  EXPECT_FALSE(insert_plan_has_ephemeral());
  EXPECT_EQ(count_tables(*db, "log_chunks"), 1);
  EXPECT_EQ(count_tables(*db, "log_chunks_v13"), 0);
  EXPECT_EQ(*db->query_int("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                           "tbl_name = 'log_chunks' AND name IN "
                           "('log_chunks_by_run', 'log_chunks_by_job')"),
            2);
  EXPECT_EQ(*db->query_int("SELECT count(*) FROM pragma_foreign_key_list('log_chunks')"), 2);
  // The counter went on from the deleted line's 4, not from the largest seq left.
  EXPECT_EQ(*db->query_int("SELECT count(*) FROM sqlite_sequence WHERE name = 'log_chunks'"), 1);
  ASSERT_TRUE(
      db->exec("INSERT INTO log_chunks (run_id, job_id, step_index, stream, text, time) "
               "VALUES (2, 20, 1, 'stdout', 'new', 104)"));
  EXPECT_EQ(*db->last_insert_id(), 5);
  EXPECT_FALSE(
      db->exec("INSERT INTO log_chunks (run_id, job_id, stream, text, time) "
               "VALUES (2, 20, 'stdin', 'x', 1)"));
  EXPECT_FALSE(
      db->exec("INSERT INTO log_chunks (run_id, job_id, stream, text, time) "
               "VALUES (2, 99, 'stdout', 'x', 1)"));
  // ON DELETE CASCADE still: a deleted run takes its lines along.
  ASSERT_TRUE(db->exec("DELETE FROM jobs WHERE id = 20; DELETE FROM runs WHERE id = 2"));
  EXPECT_EQ(*db->query_int("SELECT count(*) FROM log_chunks"), 2);
}

TEST_F(MigrationsTest, NewerDatabaseIsRefused) {
  auto db = open_db();
  ASSERT_TRUE(db->exec("PRAGMA user_version = 42"));
  auto refused = migrate(*db, schema_migrations());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::unsupported);
  EXPECT_NE(refused.error().message.find("schema version 42"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(*db->query_int("PRAGMA user_version"), 42);
}

}  // namespace
}  // namespace kiln::store
