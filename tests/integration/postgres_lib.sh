# For tests/integration/postgres_*_test.sh, after lib.sh's itest_begin: `postgres_begin` starts a
# throwaway PostgreSQL server (scripts/postgres-test-server) in $ITEST_DIR/pg, stopped when the
# script exits, and sets $PG_URL to its database. Without PostgreSQL's binaries the script says
# so and exits 77, which ctest reports as skipped (tests/CMakeLists.txt).

postgres_begin() {
  if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    echo "$ITEST_NAME: SKIPPED: no PostgreSQL binaries (/usr/lib/postgresql/*/bin/initdb);" \
         "scripts/deps installs them"
    trap - EXIT
    rm -rf "$ITEST_DIR"
    exit 77
  fi
  chmod 755 "$ITEST_DIR"  # the server's user (nobody, when root runs this) must reach pg/
  "$KILN_SOURCE_DIR/scripts/postgres-test-server" start "$ITEST_DIR/pg" >/dev/null ||
    itest_die "the PostgreSQL test server did not start"
  trap 'postgres_on_exit' EXIT
  PG_URL="$(cat "$ITEST_DIR/pg/url")"
  export PG_URL
}

postgres_on_exit() {
  local status=$?
  # Without this, set -e ends the trap at `(exit STATUS)` of a failed test, before itest_on_exit
  # kills the test's processes (a failed run once left a kiln and its step running).
  set +e
  "$KILN_SOURCE_DIR/scripts/postgres-test-server" stop "$ITEST_DIR/pg"
  (exit "$status")
  itest_on_exit
}

# psql_value SQL: one value from the test database.
psql_value() { psql "$PG_URL" -XAtqc "$1"; }
