#include "kiln/store/postgres.h"

#include <libpq-fe.h>

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "kiln/store/postgres_dialect.h"

namespace kiln::store::pg {
namespace {

// Type OIDs of pg_type.h (a server header libpq-dev does not ship).
constexpr unsigned k_int8_oid = 20;
constexpr unsigned k_int4_oid = 23;
constexpr unsigned k_text_oid = 25;
constexpr unsigned k_float8_oid = 701;

unsigned type_oid(sql::Type type) {
  switch (type) {
    case sql::Type::integer:
      return k_int8_oid;
    case sql::Type::real:
      return k_float8_oid;
    case sql::Type::text:
      return k_text_oid;
    case sql::Type::any:
      return 0;
  }
  return 0;
}

bool ok(const pg_result* result) {
  const auto status = PQresultStatus(result);
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

bool starts_with_word(std::string_view sql, std::string_view word) {
  std::size_t i = 0;
  while (i < sql.size() && std::isspace(static_cast<unsigned char>(sql[i]))) ++i;
  if (sql.size() - i < word.size()) return false;
  for (std::size_t k = 0; k < word.size(); ++k)
    if (std::toupper(static_cast<unsigned char>(sql[i + k])) != word[k]) return false;
  return true;
}

}  // namespace

void ConnectionCloser::operator()(pg_conn* connection) const { PQfinish(connection); }
void ResultClearer::operator()(pg_result* result) const { PQclear(result); }

Result<std::unique_ptr<Database>> Database::connect(const std::string& url,
                                                    const std::string& password) {
  // dbname with expand_dbname=1 takes the whole URI; the password, when given, is a parameter of
  // its own so that it never appears in the URL (or in a message naming it).
  std::vector<const char*> keys = {"dbname", "client_encoding", "application_name"};
  std::vector<const char*> values = {url.c_str(), "UTF8", "kiln"};
  if (!password.empty()) {
    keys.push_back("password");
    values.push_back(password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  std::unique_ptr<pg_conn, ConnectionCloser> connection(
      PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1));
  if (connection == nullptr) return fail(ErrorCode::io_error, "{}: out of memory", url);
  if (PQstatus(connection.get()) != CONNECTION_OK) {
    std::string message = PQerrorMessage(connection.get());
    while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back())))
      message.pop_back();
    return fail(ErrorCode::io_error, "cannot connect to {}: {}", url, message);
  }
  std::unique_ptr<Database> db(new Database(std::move(connection), url));
  // The schema scripts' notices ("table does not exist, skipping") are not for the user.
  KILN_TRY_VOID(db->exec("SET client_min_messages = warning"));
  return db;
}

Error Database::error(std::string_view sql, const pg_result* result) const {
  std::string message = result != nullptr ? PQresultErrorMessage(result) : "";
  if (message.empty()) message = PQerrorMessage(connection_.get());
  while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back())))
    message.pop_back();
  return Error{ErrorCode::io_error,
               fmt::format("database {}: {} in: {}", url_, message, sql::one_line(sql)),
               {}};
}

Status Database::reconnect_if_lost() {
  if (in_transaction_ || PQstatus(connection_.get()) == CONNECTION_OK) return {};
  PQreset(connection_.get());
  if (PQstatus(connection_.get()) != CONNECTION_OK)
    return std::unexpected(error("(reconnecting)", nullptr));
  prepared_.clear();
  return exec("SET client_min_messages = warning");
}

Status Database::exec(std::string_view sql) {
  KILN_TRY_VOID(reconnect_if_lost());
  const std::string text = to_postgres(sql);
  ResultPtr result(PQexec(connection_.get(), text.c_str()));
  if (!ok(result.get())) return std::unexpected(error(sql, result.get()));
  return {};
}

Result<std::unique_ptr<sql::Statement>> Database::prepare(std::string_view sql) {
  const bool writes = starts_with_word(sql, "INSERT") || starts_with_word(sql, "UPDATE") ||
                      starts_with_word(sql, "DELETE");
  return std::unique_ptr<sql::Statement>(new Statement(*this, to_postgres(sql), writes));
}

Result<std::string> Database::prepared(const std::string& sql, const std::vector<unsigned>& types) {
  std::string key = sql;
  for (auto type : types) key += fmt::format(",{}", type);
  if (auto found = prepared_.find(key); found != prepared_.end()) return found->second;
  std::string name = fmt::format("kiln_{}", prepared_.size() + 1);
  ResultPtr result(PQprepare(connection_.get(), name.c_str(), sql.c_str(),
                             static_cast<int>(types.size()), types.data()));
  if (!ok(result.get())) return std::unexpected(error(sql, result.get()));
  prepared_.emplace(std::move(key), name);
  return name;
}

Result<std::int64_t> Database::query_int(std::string_view sql) {
  KILN_TRY(auto statement, prepare(sql));
  KILN_TRY(bool has_row, statement->step());
  if (!has_row) return fail(ErrorCode::internal, "no row from '{}'", sql);
  return statement->int64(0);
}

Result<std::int64_t> Database::last_insert_id() { return query_int("SELECT lastval()"); }

Status Database::begin(Mode mode) {
  auto begun = exec(mode == Mode::write
                        ? fmt::format("BEGIN; SELECT pg_advisory_xact_lock({})", k_writer_lock)
                        : std::string("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"));
  if (!begun) {
    rollback();  // BEGIN may have run and the lock failed: leave no aborted transaction
    return begun;
  }
  in_transaction_ = true;
  return {};
}

Status Database::commit() {
  // COMMIT of a transaction a failed statement aborted "succeeds" as a ROLLBACK: say so.
  const bool failed = PQtransactionStatus(connection_.get()) == PQTRANS_INERROR;
  ResultPtr result(PQexec(connection_.get(), failed ? "ROLLBACK" : "COMMIT"));
  in_transaction_ = false;
  if (failed) return fail(ErrorCode::io_error, "database {}: transaction rolled back", url_);
  if (!ok(result.get())) return std::unexpected(error("COMMIT", result.get()));
  return {};
}

void Database::rollback() {
  // Failing to roll back leaves nothing better to do; the server rolls back on disconnect.
  ResultPtr result(PQexec(connection_.get(), "ROLLBACK"));
  in_transaction_ = false;
}

Result<std::int64_t> Database::schema_version() {
  KILN_TRY(auto statement, prepare("SELECT to_regclass('kiln_schema') IS NOT NULL"));
  KILN_TRY(bool has_row, statement->step());
  if (!has_row || statement->text(0) != "t") return 0;
  return query_int("SELECT COALESCE(MAX(version), 0) FROM kiln_schema");
}

Status Database::set_schema_version(std::int64_t version) {
  return exec(
      fmt::format("CREATE TABLE IF NOT EXISTS kiln_schema (version BIGINT NOT NULL); "
                  "DELETE FROM kiln_schema; INSERT INTO kiln_schema (version) VALUES ({})",
                  version));
}

void Statement::set(int index, unsigned type, std::optional<std::string> value) {
  const auto slot = static_cast<std::size_t>(index - 1);
  if (types_.size() <= slot) {
    types_.resize(slot + 1, k_text_oid);
    values_.resize(slot + 1);
  }
  types_[slot] = type;
  values_[slot] = std::move(value);
}

Statement& Statement::bind(int index, std::int64_t value) {
  set(index, k_int8_oid, std::to_string(value));
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  set(index, k_text_oid, to_postgres_text(text));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  set(index, k_float8_oid, fmt::format("{}", value));
  return *this;
}

Statement& Statement::bind_null(int index, sql::Type type) {
  set(index, type_oid(type), std::nullopt);
  return *this;
}

Result<ResultPtr> Statement::execute() {
  KILN_TRY_VOID(db_.reconnect_if_lost());
  KILN_TRY(std::string name, db_.prepared(sql_, types_));
  std::vector<const char*> values;
  values.reserve(values_.size());
  for (const auto& value : values_) values.push_back(value ? value->c_str() : nullptr);
  const bool own_transaction = writes_ && !db_.in_transaction_;
  if (own_transaction) KILN_TRY_VOID(db_.begin(sql::Database::Mode::write));
  ResultPtr result(PQexecPrepared(db_.connection_.get(), name.c_str(),
                                  static_cast<int>(values.size()), values.data(), nullptr, nullptr,
                                  0));
  if (!ok(result.get())) {
    const char* state = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
    const std::string_view code = state != nullptr ? state : "";
    violation_ = code == "23505"   ? sql::Violation::unique
                 : code == "23503" ? sql::Violation::foreign_key
                                   : sql::Violation::none;
    auto failure = db_.error(sql_, result.get());
    if (own_transaction) db_.rollback();
    return std::unexpected(std::move(failure));
  }
  const char* changed = PQcmdTuples(result.get());
  db_.changes_ = changed != nullptr && *changed != '\0' ? std::atoi(changed) : 0;
  if (own_transaction) KILN_TRY_VOID(db_.commit());
  return result;
}

Result<bool> Statement::step() {
  if (!result_) {
    KILN_TRY(result_, execute());
    row_ = -1;
  }
  ++row_;
  return row_ < PQntuples(result_.get());
}

void Statement::reset() {
  result_.reset();
  row_ = -1;
  types_.clear();
  values_.clear();
  violation_ = sql::Violation::none;
}

bool Statement::is_null(int column) const {
  return !result_ || PQgetisnull(result_.get(), row_, column) != 0;
}

std::int64_t Statement::int64(int column) const {
  if (is_null(column)) return 0;
  std::string_view text = PQgetvalue(result_.get(), row_, column);
  std::int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

std::string Statement::text(int column) const {
  if (is_null(column)) return {};
  return std::string(PQgetvalue(result_.get(), row_, column),
                     static_cast<std::size_t>(PQgetlength(result_.get(), row_, column)));
}

std::optional<sql::Type> Statement::column_type(int column) const {
  if (is_null(column)) return std::nullopt;
  switch (PQftype(result_.get(), column)) {
    case k_int8_oid:
    case k_int4_oid:
      return sql::Type::integer;
    case k_float8_oid:
      return sql::Type::real;
    default:
      return sql::Type::text;
  }
}

double Statement::real(int column) const {
  if (is_null(column)) return 0;
  return std::strtod(PQgetvalue(result_.get(), row_, column), nullptr);
}

}  // namespace kiln::store::pg
