#!/usr/bin/env bash
# The short version of the kiln serve load test (bench/webhook_load.sh; the full one is 200
# deliveries a second for 30 s, docs/performance.md): 50 signed push deliveries a second for
# 3 s on loopback. Asserts that nothing was lost: every delivery answered 202 and became
# exactly one trigger, every trigger finished with one successful run, and every run's log
# has the line its delivery asked for; and that the server logged no SQLite busy error. Then
# the same with two replicas on one PostgreSQL store (docs/scale-out.md), the deliveries split
# across them and the second replica killed with SIGKILL a second into the load: the sender
# fails over to the first, which requeues what the dead one had started (issue 21).
# No timing is asserted (the latency it prints is for reading, not for passing).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_load

build="$(dirname "$KILN")"
if [[ ! -x "$build/bench/webhook_load" ]]; then
  itest_die "$build/bench/webhook_load is missing (it is built with the default target)"
fi
RC=0
bash "$KILN_SOURCE_DIR/bench/webhook_load.sh" --rate 50 --duration 3 --runs 2 --build "$build" \
  --work "$ITEST_DIR/load" --json "$ITEST_DIR/summary.json" >"$ITEST_DIR/load.out" \
  2>"$ITEST_DIR/load.err" || RC=$?
sed 's/^/    /' "$ITEST_DIR/load.err"
check "the load script reports nothing lost (exit $RC)" test "$RC" -eq 0
cp "$ITEST_DIR/summary.json" "$ITEST_DIR/last.out" 2>/dev/null || echo '{}' >"$ITEST_DIR/last.out"
expect_json 'd["deliveries"]' 150 "150 deliveries were sent"
expect_json 'd["accepted_202"]' 150 "each was accepted (202)"
expect_json 'd["triggers"]' 150 "each became a trigger"
expect_json 'd["duplicate_triggers"] + d["missing_triggers"]' 0 "none twice, none missing"
expect_json 'd["triggers_not_finished"] + d["triggers_without_one_run"]' 0 "every trigger finished with one run"
expect_json 'd["runs_checked"]' 150 "150 runs checked"
expect_json 'd["runs_not_success"]' 0 "every run succeeded"
expect_json 'd["log_lines_missing"]' 0 "no log line was lost"
expect_json 'd["latency_ms"]["webhook_to_first_step"]["count"]' 150 "a first-step time for every run"
serve_log="$(cat "$ITEST_DIR/load/serve-0.err" 2>/dev/null || true)"
expect_not_contains "$serve_log" "database is locked" "no SQLite busy error in the server's log"
expect_not_contains "$serve_log" "[error]" "no error in the server's log"

# ---- two replicas on one PostgreSQL store --------------------------------------------------
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  echo "serve_load: the PostgreSQL part is skipped: no PostgreSQL binaries (scripts/deps installs them)"
  itest_end
fi
chmod 755 "$ITEST_DIR"  # the PostgreSQL server's user (nobody, when root runs this) must reach it
RC=0
bash "$KILN_SOURCE_DIR/bench/webhook_load.sh" --rate 50 --duration 3 --runs 2 --build "$build" \
  --store postgresql --replicas 2 --kill-replica-after 1 --work "$ITEST_DIR/load-pg" \
  --json "$ITEST_DIR/summary-pg.json" \
  >"$ITEST_DIR/load-pg.out" 2>"$ITEST_DIR/load-pg.err" || RC=$?
sed 's/^/    /' "$ITEST_DIR/load-pg.err"
check "two replicas: the load script reports nothing lost (exit $RC)" test "$RC" -eq 0
cp "$ITEST_DIR/summary-pg.json" "$ITEST_DIR/last.out" 2>/dev/null || echo '{}' >"$ITEST_DIR/last.out"
load_err="$(cat "$ITEST_DIR/load-pg.err")"
expect_contains "$load_err" "replica 1 (pid" "two replicas: replica 1 was killed during the load"
expect_json 'd["accepted_202"] + d["answered_duplicate"]' 150 \
  "two replicas: each of 150 deliveries was delivered (202, or 200 duplicate after a failover)"
expect_json 'd["sent_again"] > 0' true "two replicas: deliveries to the dead replica were sent to the other"
expect_json 'd["triggers"]' 150 "two replicas: 150 triggers"
expect_json 'd["duplicate_triggers"] + d["missing_triggers"]' 0 "two replicas: no trigger twice, none missing"
expect_json 'd["triggers_not_finished"] + d["triggers_without_one_run"]' 0 \
  "two replicas: every trigger finished"
expect_json 'd["runs_not_success"]' 0 \
  "two replicas: every trigger has one successful run (any earlier one interrupted)"
expect_json 'd["log_lines_missing"]' 0 "two replicas: no log line was lost"
expect_not_contains "$(cat "$ITEST_DIR/load-pg/serve-0.err" 2>/dev/null || echo '[error] no log')" \
  "[error]" "two replicas: no error in the surviving replica's log"
itest_end
