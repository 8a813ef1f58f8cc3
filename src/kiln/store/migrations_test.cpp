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
  constexpr std::array<std::string_view, 2> scripts = {
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
  constexpr std::array<std::string_view, 3> scripts = {
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
