#!/usr/bin/env bash
# GPU leases and quarantine in a host store a fleet shares (kiln.yml host_store:
# postgresql://..., docs/scale-out.md#gpus-across-hosts), through the real binary on a real
# PostgreSQL: two kiln processes of one host take its one GPU in turn; a kiln on another host
# (a UTS namespace with another host name) leases its own GPU at the same time; `kiln gpus
# --all-hosts` lists both hosts' leases; a kill -9'd kiln's lease is reclaimed by the next kiln
# of its host, never by another host.
# Checks call small functions indirectly (wait_until).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/postgres_lib.sh"
itest_begin postgres_host_store
postgres_begin

SPEC="$ITEST_DIR/gpus.json"
export GATE="$ITEST_DIR/gate" EVENTS="$ITEST_DIR/events"
cat >"$SPEC" <<'JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771}]}
JSON
printf 'host_store: %s\ngpus:\n  health:\n    memory_grace: 300ms\n' "$PG_URL" >"$ITEST_DIR/kiln.yml"
export KILN_CONFIG="$ITEST_DIR/kiln.yml"
# Nothing of this test may land in a SQLite host store.
export KILN_HOST_STORE="$ITEST_DIR/must-not-exist.db"

gated_repo() {
  make_repo "$1"
  write_workflow "$1" ci.yml <<'YAML'
on: push
jobs:
  train:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          echo "start $(hostname)" >>"$EVENTS"
          while [ ! -e "$GATE" ]; do sleep 0.05; done
          echo "end $(hostname)" >>"$EVENTS"
YAML
  commit_all "$1" "gated GPU job"
}
for r in a b c; do gated_repo "$ITEST_DIR/$r"; done
other=kiln-fleet-other
unshare -u true 2>/dev/null || { echo "postgres_host_store: SKIPPED: no UTS namespaces here"; exit 77; }
# run_on_other DIR OUT: kiln run as a kiln on another host.
run_on_other() {
  unshare -u bash -c "hostname $other && exec \"$KILN\" run -C \"$1\" --simulate-gpus \"$SPEC\"" \
    >"$2" 2>&1
}

# ---- one host: the second kiln waits for the first's lease, which is in PostgreSQL ----------
: >"$EVENTS"
"$KILN" run -C "$ITEST_DIR/a" --simulate-gpus "$SPEC" >"$ITEST_DIR/a.out" 2>&1 &
a_pid=$!
itest_track_pid "$a_pid"
wait_until 20 grep -q "start" "$EVENTS" || itest_die "the first run's GPU job did not start: $(cat "$ITEST_DIR/a.out")"
expect_eq "$(psql_value "SELECT host FROM gpu_leases")" "$(hostname)" "the lease is a row of this host in PostgreSQL"
"$KILN" run -C "$ITEST_DIR/b" --simulate-gpus "$SPEC" >"$ITEST_DIR/b.out" 2>&1 &
b_pid=$!
itest_track_pid "$b_pid"
sleep 1
expect_eq "$(grep -c start "$EVENTS")" 1 "the second kiln of the host waits while the first holds the GPU"

# ---- another host: its own GPU, leased at the same time ------------------------------------
run_on_other "$ITEST_DIR/c" "$ITEST_DIR/c.out" &
c_pid=$!
itest_track_pid "$c_pid"
wait_until 20 grep -q "start $other" "$EVENTS" ||
  itest_die "the other host's GPU job did not start: $(cat "$ITEST_DIR/c.out")"
pass "a kiln of another host leases its GPU while this host's is held"
kiln gpus --all-hosts --json
expect_rc 0 "kiln gpus --all-hosts"
expect_json 'len(d["gpus"])' 2 "two leases in the fleet"
expect_json 'sorted(g["host"] for g in d["gpus"])' "$(python3 -c "import json; print(json.dumps(sorted(['$(hostname)', '$other'])))")" \
  "each lease names its host"
expect_json 'all(g["state"]["kind"] == "leased" and "train" in g["state"]["detail"] for g in d["gpus"])' true \
  "each lease names the job holding it"
kiln gpus --all-hosts
expect_contains "$OUT" "$other" "the table names the other host"
expect_contains "$OUT" "free GPUs are not listed" "the table says what it cannot show"
kiln gpus --json --simulate-gpus "$SPEC"
expect_json 'd["gpus"][0]["state"]["kind"]' leased "this host's own view: its GPU leased"

touch "$GATE"
for pid in "$a_pid" "$b_pid" "$c_pid"; do wait_exit "$pid" 30 || itest_die "a run did not end"; done
expect_eq "$(grep -c "^end" "$EVENTS")" 3 "all three jobs ran to the end"
expect_eq "$(psql_value "SELECT count(*) FROM gpu_leases")" 0 "every lease is released"
[[ ! -e "$KILN_HOST_STORE" ]] && pass "no SQLite host store was made" || fail "a SQLite host store was made"

# ---- kill -9: the next kiln of the same host reclaims the lease, another host does not -----
rm -f "$GATE"
: >"$EVENTS"
run_on_other "$ITEST_DIR/c" "$ITEST_DIR/c2.out" &
c_pid=$!
itest_track_pid "$c_pid"
wait_until 20 grep -q "start" "$EVENTS" || itest_die "the other host's job did not start"
# The kiln process inside the namespace (bash exec'd it, so it is $c_pid).
kill -9 "$c_pid"
wait_exit "$c_pid" 10 || true
pkill -9 -f "$ITEST_DIR/c" 2>/dev/null || true
touch "$GATE"
kiln run -C "$ITEST_DIR/a" --simulate-gpus "$SPEC"
expect_rc 0 "this host runs its GPU job while the dead kiln of the other host left a lease"
expect_not_contains "$OUT$ERR" "reclaimed" "this host does not reclaim another host's lease"
expect_eq "$(psql_value "SELECT host FROM gpu_leases")" "$other" "the other host's void lease is still there"
rc=0
run_on_other "$ITEST_DIR/c" "$ITEST_DIR/c3.out" || rc=$?
expect_eq "$rc" 0 "the other host's next kiln runs"
expect_contains "$(cat "$ITEST_DIR/c3.out")" "reclaimed the lease on GPU GPU-sim-000000000000" \
  "the other host's next kiln reclaims its dead kiln's lease, and says so"
expect_eq "$(psql_value "SELECT count(*) FROM gpu_leases")" 0 "no lease is left"

itest_end
