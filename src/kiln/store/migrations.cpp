#include "kiln/store/migrations.h"

#include <array>

namespace kiln::store {
namespace {

// Version 1: runs, jobs, steps, log chunks, artifacts. Times are ms since the epoch (NULL: not
// yet); JSON columns hold text ('null' when empty); statuses are the names in records.cpp.
constexpr std::string_view k_v1_core = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  number INTEGER NOT NULL,
  repository TEXT NOT NULL,
  workflow_path TEXT NOT NULL,
  workflow_name TEXT NOT NULL,
  event TEXT NOT NULL,
  ref TEXT NOT NULL,
  sha TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN
    ('queued', 'running', 'success', 'failure', 'cancelled', 'interrupted')),
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  owner_pid INTEGER NOT NULL,
  owner_start_time INTEGER NOT NULL,
  owner_host TEXT NOT NULL,
  extra TEXT NOT NULL DEFAULT 'null'
);
CREATE INDEX runs_by_repository ON runs (repository, id);
CREATE INDEX runs_by_workflow ON runs (repository, workflow_path, number);
CREATE INDEX runs_active ON runs (status) WHERE status IN ('queued', 'running');

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  workflow_job_id TEXT NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'waiting', 'running', 'success', 'failure',
                                         'cancelled', 'skipped', 'interrupted')),
  conclusion TEXT CHECK (conclusion IN ('success', 'failure', 'cancelled', 'skipped')),
  matrix TEXT NOT NULL DEFAULT 'null',
  labels TEXT NOT NULL DEFAULT 'null',
  outputs TEXT NOT NULL DEFAULT 'null',
  started_at INTEGER,
  finished_at INTEGER,
  exit_code INTEGER,
  message TEXT NOT NULL DEFAULT '',
  extra TEXT NOT NULL DEFAULT 'null',
  UNIQUE (run_id, key)
);

CREATE TABLE steps (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  step_index INTEGER NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'waiting', 'running', 'success', 'failure',
                                         'cancelled', 'skipped', 'interrupted')),
  outcome TEXT CHECK (outcome IN ('success', 'failure', 'cancelled', 'skipped')),
  conclusion TEXT CHECK (conclusion IN ('success', 'failure', 'cancelled', 'skipped')),
  exit_code INTEGER,
  started_at INTEGER,
  finished_at INTEGER,
  outputs TEXT NOT NULL DEFAULT 'null',
  UNIQUE (job_id, step_index)
);

-- seq is the global order of chunks: AUTOINCREMENT under SQLite's single writer grows in
-- commit order, which live tails rely on. run_id is copied from the job for run-wide reads.
CREATE TABLE log_chunks (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  step_index INTEGER,
  stream TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr', 'system')),
  text TEXT NOT NULL,
  time INTEGER NOT NULL
);
CREATE INDEX log_chunks_by_run ON log_chunks (run_id, seq);
CREATE INDEX log_chunks_by_job ON log_chunks (job_id, seq);

CREATE TABLE artifacts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  job_id INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  file_count INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  retention_days INTEGER NOT NULL,
  expires_at INTEGER,
  UNIQUE (run_id, name)
);
CREATE INDEX artifacts_by_expiry ON artifacts (expires_at) WHERE expires_at IS NOT NULL;
)sql";

// Version 2: GPU leases and quarantine, host-wide (keyed by host, so a store shared by several
// hosts keeps them apart). run_id is not a foreign key: the holder's runs may live in another
// database (each repository has its own for `kiln run`).
constexpr std::string_view k_v2_gpus = R"sql(
CREATE TABLE gpu_leases (
  host TEXT NOT NULL,
  gpu_uuid TEXT NOT NULL,
  holder TEXT NOT NULL,
  job_token TEXT NOT NULL,
  run_id INTEGER NOT NULL,
  owner_pid INTEGER NOT NULL,
  owner_start_time INTEGER NOT NULL,
  granted_at INTEGER NOT NULL,
  PRIMARY KEY (host, gpu_uuid)
);
CREATE INDEX gpu_leases_by_token ON gpu_leases (job_token);

CREATE TABLE gpu_quarantine (
  host TEXT NOT NULL,
  gpu_uuid TEXT NOT NULL,
  reason TEXT NOT NULL,
  since INTEGER NOT NULL,
  memory_limit_mib INTEGER NOT NULL DEFAULT 0,
  manual_release INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (host, gpu_uuid)
);
)sql";

// Version 3: benchmark results, the perf gate's history. A series is (repository, benchmark,
// metric, branch, testbed); samples is a JSON array of the repetitions ('[]' for none).
constexpr std::string_view k_v3_benchmarks = R"sql(
CREATE TABLE benchmark_results (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  repository TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  direction TEXT NOT NULL CHECK (direction IN ('smaller_is_better', 'bigger_is_better')),
  branch TEXT NOT NULL,
  testbed TEXT NOT NULL,
  commit_sha TEXT NOT NULL,
  time INTEGER NOT NULL,
  run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
  job_id INTEGER REFERENCES jobs (id) ON DELETE SET NULL,
  source TEXT NOT NULL DEFAULT '',
  format TEXT NOT NULL DEFAULT '',
  value REAL NOT NULL,
  samples TEXT NOT NULL DEFAULT '[]',
  extra TEXT NOT NULL DEFAULT 'null'
);
CREATE INDEX benchmark_results_by_series
  ON benchmark_results (repository, benchmark, metric, branch, testbed, time, id);
CREATE INDEX benchmark_results_by_run ON benchmark_results (run_id) WHERE run_id IS NOT NULL;
)sql";

// Test cases from the JUnit XML jobs write (report/junit.h); by test for per-test history.
constexpr std::string_view k_v4_test_cases = R"sql(
CREATE TABLE test_cases (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  repository TEXT NOT NULL,
  commit_sha TEXT NOT NULL,
  suite TEXT NOT NULL DEFAULT '',
  classname TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error', 'skipped')),
  seconds REAL NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  details TEXT NOT NULL DEFAULT '',
  output TEXT NOT NULL DEFAULT '',
  file TEXT NOT NULL DEFAULT '',
  flaky INTEGER NOT NULL DEFAULT 0,
  time INTEGER NOT NULL
);
CREATE INDEX test_cases_by_job ON test_cases (job_id);
CREATE INDEX test_cases_by_run ON test_cases (run_id);
CREATE INDEX test_cases_by_test ON test_cases (repository, classname, name, time, id);
CREATE INDEX test_cases_by_commit ON test_cases (repository, commit_sha, status);
)sql";

// Version 5: the events `kiln serve` accepted (webhook deliveries), de-duplicated by the
// forge's delivery id; run_ids is a JSON array of the runs the engine created for one.
constexpr std::string_view k_v5_triggers = R"sql(
CREATE TABLE triggers (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  delivery TEXT,
  repository TEXT NOT NULL,
  event TEXT NOT NULL,
  ref TEXT NOT NULL,
  sha TEXT NOT NULL,
  sender TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN
    ('queued', 'waiting_approval', 'running', 'finished', 'failed', 'cancelled')),
  message TEXT NOT NULL DEFAULT '',
  payload TEXT NOT NULL DEFAULT 'null',
  run_ids TEXT NOT NULL DEFAULT 'null',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX triggers_by_delivery ON triggers (delivery) WHERE delivery IS NOT NULL;
CREATE INDEX triggers_by_status ON triggers (status, id);
)sql";

// Version 6: the last commit `kiln serve` saw on each polled branch (serve.repositories.*.poll),
// so that a restart neither misses the commits pushed meanwhile nor triggers old ones.
constexpr std::string_view k_v6_poll_heads = R"sql(
CREATE TABLE poll_heads (
  repository TEXT NOT NULL,
  ref TEXT NOT NULL,
  sha TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (repository, ref)
);
)sql";

// Version 7: GPU samples of jobs (records.h GpuSampleRecord), written in batches while a job
// runs. Nullable columns are readings the provider did not give; throttle holds NVML's
// clock-event reason bits; processes is a JSON array of the job's processes on the GPU.
constexpr std::string_view k_v7_gpu_samples = R"sql(
CREATE TABLE gpu_samples (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  gpu_index INTEGER NOT NULL,
  gpu_uuid TEXT NOT NULL DEFAULT '',
  time INTEGER NOT NULL,
  util REAL,
  mem_util REAL,
  mem_used_mib INTEGER NOT NULL,
  mem_total_mib INTEGER,
  temp_c REAL,
  power_w REAL,
  energy_mj INTEGER,
  sm_clock_mhz INTEGER,
  mem_clock_mhz INTEGER,
  throttle INTEGER NOT NULL DEFAULT 0,
  processes TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX gpu_samples_by_job ON gpu_samples (job_id, gpu_index, time);
)sql";

// Version 8: re-runs (`kiln rerun`, POST /api/runs/ID/rerun). A re-run is a new run row, the
// next attempt of the run it repeats (GitHub's run_attempt), with that run's number; rerun_of
// names the run it repeats (NULL: a first attempt). A trigger's rerun is null for an event, or
// {"run": ID, "failed_only": BOOL} for a re-run queued on the server.
constexpr std::string_view k_v8_rerun = R"sql(
ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN rerun_of INTEGER REFERENCES runs (id) ON DELETE SET NULL;
ALTER TABLE triggers ADD COLUMN rerun TEXT NOT NULL DEFAULT 'null';
)sql";

// Version 9: replay protection of `kiln serve` beyond the delivery id (issue 26): a trigger's
// identity is its event and the SHA-256 of its signed body, unique like the delivery id, so a
// signed body delivered again under a new delivery id is recognised (NULL: not checked).
constexpr std::string_view k_v9_trigger_identity = R"sql(
ALTER TABLE triggers ADD COLUMN identity TEXT;
CREATE UNIQUE INDEX triggers_by_identity ON triggers (identity) WHERE identity IS NOT NULL;
)sql";

// Version 10: several `kiln serve` replicas on one database (docs/scale-out.md). A trigger is
// claimed by one replica (claimed_by: its id, HOST:PID:START_TIME; NULL: by a server before
// replicas), and every replica beats in replicas, so that the running triggers of one that
// stopped beating are run by another.
constexpr std::string_view k_v10_replicas = R"sql(
ALTER TABLE triggers ADD COLUMN claimed_by TEXT;
CREATE TABLE replicas (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  start_time INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
);
)sql";

// v11: why a failed job failed (docs/failures.md): its class ("code", "gpu-fault", ...; ''
// for a job that did not fail, and for jobs recorded before the classes) and the evidence line.
constexpr std::string_view k_v11_failure_class = R"sql(
ALTER TABLE jobs ADD COLUMN failure_class TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN failure_evidence TEXT NOT NULL DEFAULT '';
)sql";

// v12: quarantined tests (records.h TestQuarantine, docs/failures.md): one row per repository and
// test, kept once it ended (released_at, or expires_at in the past) so that the flip rule counts
// only the runs after it. manual: 1 for `kiln tests quarantine`, 0 for the flip rule.
constexpr std::string_view k_v12_test_quarantine = R"sql(
CREATE TABLE test_quarantine (
  repository TEXT NOT NULL,
  test TEXT NOT NULL,
  reason TEXT NOT NULL,
  manual INTEGER NOT NULL DEFAULT 0,
  since INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  released_at INTEGER,
  PRIMARY KEY (repository, test)
);
)sql";

// v13: log_chunks rebuilt with its stream CHECK written as comparisons. SQLite evaluates
// `stream IN ('stdout', 'stderr', 'system')` by opening, filling and closing an ephemeral B-tree
// for every row inserted, about 40% of a log line's cost (docs/performance.md "Profile:
// instructions a line"); `stream = 'stdout' OR ...` is three comparisons. The CHECK stays (a
// store may be written by other tools, `kiln migrate` among them). SQLite cannot alter a CHECK, so
// the table is rebuilt the way its documentation says: a new table, every row copied with its
// seq, the AUTOINCREMENT counter carried over (not max(seq): the seqs of deleted lines are never
// given again, live tails rely on seq only growing), the old table dropped, the new one renamed
// (which renames its counter too) and the indexes made again. Nothing references log_chunks, so
// the foreign keys of other tables are not touched; its own two are checked for every copied row.
// PostgreSQL checks an IN list without such a cost and keeps its table: no script.
constexpr std::string_view k_v13_log_chunks_check = R"sql(
CREATE TABLE log_chunks_v13 (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  step_index INTEGER,
  stream TEXT NOT NULL CHECK (stream = 'stdout' OR stream = 'stderr' OR stream = 'system'),
  text TEXT NOT NULL,
  time INTEGER NOT NULL
);
INSERT INTO log_chunks_v13 (seq, run_id, job_id, step_index, stream, text, time)
  SELECT seq, run_id, job_id, step_index, stream, text, time FROM log_chunks ORDER BY seq;
DELETE FROM sqlite_sequence WHERE name = 'log_chunks_v13';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'log_chunks_v13', seq FROM sqlite_sequence WHERE name = 'log_chunks';
DROP TABLE log_chunks;
ALTER TABLE log_chunks_v13 RENAME TO log_chunks;
CREATE INDEX log_chunks_by_run ON log_chunks (run_id, seq);
CREATE INDEX log_chunks_by_job ON log_chunks (job_id, seq);
)sql";

// v14: queue time (issue 24, records.h JobQueueTime): when a job was queued (NULL: recorded
// before), how long it waited to start (NULL: it did not start), the milliseconds it waited by
// reason (a JSON object: "gpus", "priority", "concurrency", ...), its priority class (kiln.yml
// priority:; '' before) and the model of the GPUs it was given ('' for none), which
// kiln_job_queue_seconds is counted by. Plain columns that PostgreSQL takes translated.
constexpr std::string_view k_v14_queue_time = R"sql(
ALTER TABLE jobs ADD COLUMN queued_at INTEGER;
ALTER TABLE jobs ADD COLUMN queue_ms INTEGER;
ALTER TABLE jobs ADD COLUMN queue_reasons TEXT NOT NULL DEFAULT '{}';
ALTER TABLE jobs ADD COLUMN priority TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN gpu_model TEXT NOT NULL DEFAULT '';
)sql";

constexpr std::array<Migration, 14> k_migrations = {
    k_v1_core,
    k_v2_gpus,
    k_v3_benchmarks,
    k_v4_test_cases,
    k_v5_triggers,
    k_v6_poll_heads,
    k_v7_gpu_samples,
    k_v8_rerun,
    k_v9_trigger_identity,
    k_v10_replicas,
    k_v11_failure_class,
    k_v12_test_quarantine,
    Migration(k_v13_log_chunks_check, /*postgres_sql=*/""),
    k_v14_queue_time,
};

}  // namespace

std::span<const Migration> schema_migrations() { return k_migrations; }

int latest_schema_version() { return static_cast<int>(k_migrations.size()); }

Result<int> migrate(sql::Database& db, std::span<const Migration> scripts) {
  const auto known = static_cast<std::int64_t>(scripts.size());
  auto check_version = [&](std::int64_t version) -> Status {
    if (version > known) {
      return fail(ErrorCode::unsupported,
                  "database {} has schema version {}, newer than the {} this kiln knows; "
                  "use a newer kiln or another --store",
                  db.name(), version, known);
    }
    if (version < 0) {
      return fail(ErrorCode::io_error, "database {} has a negative schema version {}", db.name(),
                  version);
    }
    return {};
  };
  // Fast path, no write lock: most opens find the database current.
  KILN_TRY(std::int64_t found, db.schema_version());
  KILN_TRY_VOID(check_version(found));
  if (found == known) return static_cast<int>(found);

  KILN_TRY(auto transaction, sql::Transaction::begin(db));
  // Read again under the write lock: another process may have migrated meanwhile.
  KILN_TRY(found, db.schema_version());
  KILN_TRY_VOID(check_version(found));
  for (auto version = found; version < known; ++version) {
    const auto script = scripts[static_cast<std::size_t>(version)].script(db.dialect());
    if (script.empty()) continue;
    if (auto applied = db.exec(script); !applied) {
      auto error = applied.error();
      error.message =
          fmt::format("migration to schema version {} failed: {}", version + 1, error.message);
      return std::unexpected(std::move(error));
    }
  }
  KILN_TRY_VOID(db.set_schema_version(known));
  KILN_TRY_VOID(transaction.commit());
  return static_cast<int>(found);
}

}  // namespace kiln::store
