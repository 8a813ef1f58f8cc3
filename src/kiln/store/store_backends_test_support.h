#pragma once
// For the store's tests only: one suite over both backends. A test written against
// StoreBackendTest (TEST_P) runs once on SQLite and once on PostgreSQL; open_store() opens the
// store of the current backend for this test (a fresh SQLite file, or a fresh PostgreSQL schema),
// as often as the test likes and from forked children too.
//
// The PostgreSQL server is started by a ctest fixture (scripts/postgres-test-server, see
// CMakeLists.txt), which names its directory in $KILN_TEST_POSTGRES_DIR. Without PostgreSQL's
// binaries the PostgreSQL half is skipped and says so; with them but without a server (the test
// binary run by hand) it fails and says how to give it one.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>

#include "kiln/store/postgres.h"
#include "kiln/store/postgres_store.h"
#include "kiln/store/sqlite.h"
#include "kiln/store/sqlite_store.h"
#include "kiln/store/test_support.h"

namespace kiln::store::testing {

enum class Backend { sqlite, postgresql };

inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::sqlite ? "SQLite" : "PostgreSQL";
}

// So that ctest's names read .../PostgreSQL  # GetParam() = PostgreSQL.
inline void PrintTo(Backend backend, std::ostream* out) {
  *out << (backend == Backend::sqlite ? "SQLite" : "PostgreSQL");
}

inline auto backends() { return ::testing::Values(Backend::sqlite, Backend::postgresql); }

// The server's base URL, or empty when there is none.
inline std::string postgres_test_url() {
  const char* dir = std::getenv("KILN_TEST_POSTGRES_DIR");
  if (dir == nullptr) return {};
  std::ifstream file(std::filesystem::path(dir) / "url");
  std::string url;
  std::getline(file, url);
  return url;
}

inline bool postgres_binaries_present() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (std::filesystem::exists(entry.path() / "bin" / "initdb", ec)) return true;
  return false;
}

class StoreBackendTest : public TempDirTest, public ::testing::WithParamInterface<Backend> {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    if (GetParam() == Backend::sqlite) return;
    auto base = postgres_test_url();
    if (base.empty()) {
      if (!postgres_binaries_present())
        GTEST_SKIP() << "PostgreSQL half skipped: no PostgreSQL binaries "
                        "(/usr/lib/postgresql/*/bin/initdb); scripts/deps installs them";
      FAIL() << "no PostgreSQL test server: run through ctest (fixture postgres_server), or "
                "scripts/postgres-test-server start DIR and set KILN_TEST_POSTGRES_DIR=DIR";
    }
    // A schema of its own per test: the tables start empty.
    static std::atomic<int> counter{0};
    schema_ = fmt::format("t{}_{}_{}", getpid(), ::testing::UnitTest::GetInstance()->random_seed(),
                          counter++);
    auto admin = pg::Database::connect(base, "");
    ASSERT_TRUE(admin) << admin.error().to_string();
    ASSERT_TRUE((*admin)->exec(
        fmt::format("DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}", schema_)));
    url_ = fmt::format("{}&options=-csearch_path%3D{}", base, schema_);
  }

  void TearDown() override {
    if (!schema_.empty() && !HasFailure()) {
      if (auto admin = pg::Database::connect(postgres_test_url(), ""))
        (void)(*admin)->exec(fmt::format("DROP SCHEMA IF EXISTS {} CASCADE", schema_));
    }
    TempDirTest::TearDown();
  }

  bool postgres() const { return GetParam() == Backend::postgresql; }

  Result<std::unique_ptr<Store>> try_open_store(bool mark_interrupted_on_open = true) {
    if (GetParam() == Backend::sqlite) {
      SqliteStoreOptions options;
      options.mark_interrupted_on_open = mark_interrupted_on_open;
      return open_sqlite_store(db_path(), options);
    }
    PostgresStoreOptions options;
    options.url = url_;
    options.journal_dir = dir_ / "journals";
    options.mark_interrupted_on_open = mark_interrupted_on_open;
    return open_postgres_store(options);
  }

  // A bare connection to this test's database, for what the Store does not show.
  std::unique_ptr<sql::Database> raw_database() {
    Result<std::unique_ptr<sql::Database>> db =
        postgres()
            ? Result<std::unique_ptr<sql::Database>>(pg::Database::connect(url_, ""))
            : Result<std::unique_ptr<sql::Database>>(sqlite::Database::open(db_path(), 1000));
    EXPECT_TRUE(db) << db.error().to_string();
    return db ? std::move(*db) : nullptr;
  }

  std::unique_ptr<Store> open_store() {
    auto store = try_open_store();
    EXPECT_TRUE(store) << store.error().to_string();
    return store ? std::move(*store) : nullptr;
  }

  std::string schema_;
  std::string url_;  // the PostgreSQL store's URL, for this test's schema
};

}  // namespace kiln::store::testing
