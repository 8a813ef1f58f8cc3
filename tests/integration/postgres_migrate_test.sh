#!/usr/bin/env bash
# kiln migrate --from sqlite PATH --to postgresql://...: a host's history (runs, jobs, steps,
# logs, benchmark results, test results...) moved into PostgreSQL with every row of every table,
# then read back through the real binary (kiln runs, kiln logs --store postgresql://...); a
# second migrate into the now full database is refused; bad arguments are exit 2.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/postgres_lib.sh"
itest_begin postgres_migrate
postgres_begin

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF_WF'
name: ci
on: push
jobs:
  build:
    runs-on: [self-hosted, linux]
    steps:
      - run: echo "MIGRATED-LOG-LINE $KILN_RUN_ID"
      - run: |
          printf '<testsuite name="s"><testcase name="t1" classname="c"/><testcase name="t2" classname="c"><failure message="no"/></testcase></testsuite>' > junit.xml
          echo junit.xml >> "$KILN_TEST_RESULTS"
  test:
    needs: build
    runs-on: [self-hosted, linux]
    steps:
      - run: echo "SECOND JOB"
EOF_WF
commit_all "$repo" "a workflow"
db="$ITEST_DIR/history.db"
for i in 1 2 3; do
  kiln run -C "$repo" --store "$db" push
  expect_rc 0 "run $i stored"
done
python3 -c 'import json; json.dump([{"name": "k", "unit": "ms", "value": 10, "samples": [10, 10.5, 9.5]}], open("'"$ITEST_DIR"'/bench.json", "w"))'
kiln bench ingest -C "$repo" --store "$db" --testbed lab "$ITEST_DIR/bench.json"
expect_rc 0 "a benchmark result stored"

tables="$(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")"
kiln migrate --from sqlite "$db" --to "$PG_URL"
expect_rc 0 "kiln migrate moves the history"
for table in $tables; do
  want="$(sqlite3 "$db" "SELECT COUNT(*) FROM $table")"
  got="$(psql_value "SELECT COUNT(*) FROM $table")"
  if [[ "$want" == "$got" ]]; then pass "$table: $got rows in both"; else fail "$table: $want rows in SQLite, $got in PostgreSQL"; fi
  expect_match "$OUT" "^$table +$want rows" "kiln migrate reports the $want rows of $table"
done
for table in runs jobs steps log_chunks test_cases benchmark_results; do
  count="$(psql_value "SELECT COUNT(*) FROM $table")"
  check "$table is not empty ($count rows): the check above compared something" test "$count" -gt 0
done
check "the ids are kept" test "$(sqlite3 "$db" "SELECT group_concat(seq) FROM (SELECT seq FROM log_chunks ORDER BY seq)")" = "$(psql_value "SELECT string_agg(seq::text, ',' ORDER BY seq) FROM log_chunks")"

kiln runs --store "$PG_URL" --json
expect_rc 0 "kiln runs reads the PostgreSQL store"
expect_json 'len(d)' 3 "and lists the three runs"
last="$(sqlite3 "$db" "SELECT MAX(id) FROM runs")"
kiln logs --store "$PG_URL" "$last"
expect_contains "$OUT" "MIGRATED-LOG-LINE $last" "kiln logs prints a migrated run's log from PostgreSQL"

# New rows get new ids, after the copied ones: the sequences were moved on.
kiln run -C "$repo" --store "$PG_URL" push
expect_rc 0 "a new run on the PostgreSQL store"
check "its id follows the migrated ones" test "$(psql_value "SELECT MAX(id) FROM runs")" -eq $((last + 1))

kiln migrate --from sqlite "$db" --to "$PG_URL"
expect_rc 2 "a second migrate into a database with runs is refused"
expect_contains "$ERR" "holds 4 runs already" "and says why"
kiln migrate --from mysql "$db" --to "$PG_URL"
expect_rc 2 "--from other than sqlite is bad input"
kiln migrate --from sqlite "$db" --to "postgresql://kiln:secret@localhost/kiln"
expect_rc 2 "a password in the URL is refused"
expect_not_contains "$ERR" "secret" "and not repeated"
itest_end
