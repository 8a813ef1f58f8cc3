#include "kiln/store/postgres_dialect.h"

#include <gtest/gtest.h>

#include <ranges>
#include <string>
#include <string_view>

#include "kiln/store/migrations.h"
#include "kiln/store/postgres_store.h"

namespace kiln::store {
namespace {

TEST(PostgresDialectTest, ParametersAndTypesAreTranslatedOutsideQuotesAndComments) {
  EXPECT_EQ(pg::to_postgres("SELECT x FROM t WHERE a = ?1 AND b = ?12"),
            "SELECT x FROM t WHERE a = $1 AND b = $12");
  EXPECT_EQ(pg::to_postgres("id INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER, v REAL,"),
            "id BIGSERIAL PRIMARY KEY, n BIGINT, v DOUBLE PRECISION,");
  EXPECT_EQ(pg::to_postgres("SELECT 'why? INTEGER' -- is ?1 REAL\n, ?2"),
            "SELECT 'why? INTEGER' -- is ?1 REAL\n, $2");
  EXPECT_EQ(pg::to_postgres("SELECT 'it''s ?' , ?3"), "SELECT 'it''s ?' , $3");
  // Only whole words: a column named real_time or INTEGERS stays.
  EXPECT_EQ(pg::to_postgres("real_time INTEGERS REALLY"), "real_time INTEGERS REALLY");
}

TEST(PostgresDialectTest, EveryMigrationLosesItsSqliteTypes) {
  for (const auto& migration : schema_migrations()) {
    // The SQL without its comments (which may name SQLite's types).
    std::string translated;
    for (auto line :
         std::views::split(pg::to_postgres(migration.script(sql::Dialect::postgres)), '\n')) {
      std::string_view text(line.begin(), line.end());
      translated.append(text.substr(0, text.find("--"))).append("\n");
    }
    EXPECT_EQ(translated.find("AUTOINCREMENT"), std::string::npos) << translated;
    EXPECT_EQ(translated.find(" INTEGER"), std::string::npos) << translated;
    EXPECT_EQ(translated.find(" REAL"), std::string::npos) << translated;
  }
}

TEST(PostgresDialectTest, TextPostgresRefusesBecomesReplacementCharacters) {
  EXPECT_EQ(pg::to_postgres_text("plain ünï €𝄞"), "plain ünï €𝄞");
  EXPECT_EQ(pg::to_postgres_text(std::string("a\0b", 3)),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(pg::to_postgres_text("\xff\xc3"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(pg::to_postgres_text("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(PostgresUrlTest, APasswordInTheUrlIsRefused) {
  EXPECT_TRUE(is_postgres_url("postgresql://db/kiln"));
  EXPECT_TRUE(is_postgres_url("postgres://db/kiln"));
  EXPECT_FALSE(is_postgres_url("/var/lib/kiln/kiln.db"));
  EXPECT_TRUE(check_postgres_url("postgresql://kiln@db.example:5432/kiln?sslmode=require"));
  EXPECT_TRUE(check_postgres_url("postgresql:///kiln?host=/run/postgresql"));
  for (auto url : {"postgresql://kiln:secret@db/kiln", "postgresql://db/kiln?password=secret",
                   "postgresql://db/kiln?sslmode=require&password=secret"}) {
    auto checked = check_postgres_url(url);
    ASSERT_FALSE(checked) << url;
    EXPECT_EQ(checked.error().code, ErrorCode::invalid_input);
    EXPECT_NE(checked.error().message.find("password"), std::string::npos);
    EXPECT_EQ(checked.error().message.find("secret"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln::store
