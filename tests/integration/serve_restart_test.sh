#!/usr/bin/env bash
# kiln serve after a crash: a server killed with -9 while a trigger's GPU job runs leaves the
# trigger `running`, its run running and a GPU lease behind. Its watchdog kills the job's
# processes; the next server (serve.on_restart: requeue, the default) marks the old run
# interrupted, reclaims the lease and runs the trigger again in a new run to completion; no job
# process and no lease is left. With on_restart: fail the trigger is failed instead, and a
# trigger whose runs were interrupted three times is failed rather than requeued again. A trigger
# whose runs had all ended when its server died is recorded as ended, not run again.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_restart

secret="webhook-secret-$RANDOM"
marker="serve-restart-$$-$RANDOM"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
events="$ITEST_DIR/events.txt"
spec="$ITEST_DIR/gpus.json"
: >"$events"
cat >"$spec" <<'JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771}]}
JSON
make_repo "$repo"
# The job takes the one GPU, says it started, and waits for the gate.
write_workflow "$repo" ci.yml <<EOF2
name: CI
on: push
jobs:
  train:
    runs-on: [self-hosted, gpu]
    env:
      ITEST_MARKER: $marker
    steps:
      - run: |
          echo "start \$KILN_GPU_UUIDS" >>"$events"
          while [ ! -e "$ITEST_DIR/gate" ]; do sleep 0.1; done
          echo "end" >>"$events"
EOF2
commit_all "$repo" "a gated GPU workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"

write_config() {  # write_config [ON_RESTART]
  cat >"$ITEST_DIR/kiln.yml" <<EOF2
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  shutdown_grace: 10m
${1:+  on_restart: $1}
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
EOF2
}
start_server() {
  rm -f "$ITEST_DIR/port"
  "$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
    --simulate-gpus "$spec" >>"$ITEST_DIR/serve.out" 2>>"$ITEST_DIR/serve.err" &
  serve_pid=$!
  itest_track_pid "$serve_pid"
  wait_until 60 test -s "$ITEST_DIR/port" || {
    cat "$ITEST_DIR/serve.err" >&2
    itest_die "kiln serve did not start listening"
  }
  base="http://127.0.0.1:$(cat "$ITEST_DIR/port")"
}
http_get() {
  curl -sS -o "$ITEST_DIR/last.out" "$base$1" || echo '{}' >"$ITEST_DIR/last.out"
  OUT="$(cat "$ITEST_DIR/last.out")"
}
deliver_push() {  # deliver_push DELIVERY: prints the trigger id
  local body="$ITEST_DIR/push.json"
  # Each push its own payload (GitHub's differ in pushed_at, head_commit...): the same body
  # under another delivery id is a replay, which runs nothing.
  cat >"$body" <<EOF2
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"},
 "kiln_test_delivery": "$1"}
EOF2
  local signature="sha256=$(openssl dgst -sha256 -hmac "$secret" <"$body" | sed 's/^.*= //')"
  curl -sS -o "$ITEST_DIR/last.out" -H "X-GitHub-Event: push" -H "X-GitHub-Delivery: $1" \
    -H "X-Hub-Signature-256: $signature" -H 'Content-Type: application/json' \
    --data-binary "@$body" "$base/webhooks/github"
  json_eval - 'd["trigger"]'
}
trigger_status() {
  http_get "/api/triggers/$1"
  json_eval - 'd["status"]'
}
trigger_is() { [[ "$(trigger_status "$1")" == "$2" ]]; }
leases() { sqlite3 "$KILN_HOST_STORE" 'SELECT count(*) FROM gpu_leases' 2>/dev/null || echo 0; }
marker_processes() { tokens_with_marker "$marker" | wc -l; }
no_marker_processes() { [[ "$(marker_processes)" == 0 ]]; }
started_times() { grep -c '^start' "$events" || true; }

# ---- kill -9 mid-run, restart with the default (requeue) ----------------------------------
write_config
start_server
trigger="$(deliver_push crash-1)"
check "the GPU job starts" wait_until 120 grep -q '^start' "$events"
if [[ "$(leases)" == 1 ]]; then pass "the running job holds a GPU lease"
else fail "the running job holds $(leases) leases"; fi
if [[ "$(marker_processes)" -ge 1 ]]; then pass "the job's processes run"
else fail "no process of the job was found"; fi
http_get "/api/triggers/$trigger"
first_run="$(json_eval - 'd["run_ids"][0]')"

kill -9 "$serve_pid"
wait_exit "$serve_pid" 30 || itest_die "the killed server did not end"
check "the dead server's watchdog kills the job's processes" wait_until 60 no_marker_processes
if [[ "$(leases)" == 1 ]]; then pass "the dead server's lease is still in the host store"
else fail "expected the dead server's lease to be left: $(leases)"; fi

touch "$ITEST_DIR/gate"
start_server
check "the requeued trigger finishes after the restart" \
  wait_until 300 trigger_is "$trigger" finished
http_get "/api/triggers/$trigger"
expect_json 'len(d["run_ids"])' 2 "the trigger has its interrupted run and a new one"
expect_json 'd["run_ids"][0]' "$first_run" "the first run is the one of the dead server"
second_run="$(json_eval - 'd["run_ids"][1]')"
http_get "/api/runs/$first_run"
expect_json 'd["status"]' interrupted "the dead server's run stays interrupted"
http_get "/api/runs/$second_run"
expect_json 'd["status"]' success "the new run succeeded"
if [[ "$(started_times)" == 2 ]]; then pass "the job ran again (two starts)"
else fail "the job started $(started_times) times"; fi
expect_contains "$(cat "$ITEST_DIR/serve.out" "$ITEST_DIR/serve.err")" "left running by a server that stopped: requeued" \
  "the server says it requeued the trigger"
expect_contains "$(cat "$ITEST_DIR/serve.out" "$ITEST_DIR/serve.err")" "GPU lease of GPU-sim" \
  "the server says it reclaimed the dead server's lease"
if [[ "$(leases)" == 0 ]]; then pass "no GPU lease is left"; else fail "$(leases) leases left"; fi
if no_marker_processes; then pass "no job process is left"; else fail "job processes are left"; fi

# ---- on_restart: fail ------------------------------------------------------------------------
rm -f "$ITEST_DIR/gate"
: >"$events"
trigger="$(deliver_push crash-2)"
check "the second GPU job starts" wait_until 120 grep -q '^start' "$events"
kill -9 "$serve_pid"
wait_exit "$serve_pid" 30 || itest_die "the killed server did not end"
check "the watchdog kills the second job's processes" wait_until 60 no_marker_processes
write_config fail
start_server
check "with on_restart: fail the trigger is failed" trigger_is "$trigger" failed
expect_json 'd["message"]' "the server stopped while it ran" "the message says why"
expect_json 'len(d["run_ids"])' 1 "no new run was made"
if [[ "$(started_times)" == 1 ]]; then pass "the job did not run again"
else fail "the job started $(started_times) times"; fi
if [[ "$(leases)" == 0 ]]; then pass "the lease is reclaimed with on_restart: fail too"
else fail "$(leases) leases left"; fi

# ---- a trigger that keeps dying with its server is not requeued for ever ---------------------
kill -TERM "$serve_pid"
wait_exit "$serve_pid" 120 || itest_die "the server did not stop after SIGTERM"
write_config
: >"$events"
start_server
trigger="$(deliver_push crash-3)"
started_at_least() { [[ "$(started_times)" -ge "$1" ]]; }
for attempt in 1 2 3; do
  check "run $attempt of the job starts" wait_until 120 started_at_least "$attempt"
  kill -9 "$serve_pid"
  wait_exit "$serve_pid" 30 || itest_die "the killed server did not end"
  check "the watchdog kills the job of run $attempt" wait_until 60 no_marker_processes
  start_server
done
check "after 3 interrupted runs the trigger is failed, not requeued" trigger_is "$trigger" failed
http_get "/api/triggers/$trigger"
expect_contains "$OUT" "3 runs were interrupted, so it is not requeued again" \
  "the message says why it was not requeued"
expect_json 'len(d["run_ids"])' 3 "it had three runs"
if [[ "$(started_times)" == 3 ]]; then pass "the job did not start a fourth time"
else fail "the job started $(started_times) times"; fi
if [[ "$(leases)" == 0 ]]; then pass "no lease is left after the crash loop"
else fail "$(leases) leases left"; fi

# ---- a trigger whose run ended but which no one recorded as ended -----------------------------
# The server died after the trigger's run had ended and before it wrote the trigger finished
# (seen in bench/webhook_load.sh --kill-replica-after: the requeued trigger ran twice). That
# moment is made here: the finished trigger is set back to running and the server killed. The
# next server records it as it ended and does not run it again.
touch "$ITEST_DIR/gate"
: >"$events"
trigger="$(deliver_push crash-4)"
check "the gated job runs to the end" wait_until 120 trigger_is "$trigger" finished
kill -9 "$serve_pid"
wait_exit "$serve_pid" 30 || itest_die "the killed server did not end"
sqlite3 "$ITEST_DIR/state/kiln.db" \
  "UPDATE triggers SET status = 'running', message = '' WHERE id = $trigger"
start_server
check "the next server records the trigger finished" wait_until 60 trigger_is "$trigger" finished
http_get "/api/triggers/$trigger"
expect_contains "$OUT" "1 run(s), all succeeded; recorded after the server that ran them stopped" \
  "the message says it was recorded late"
expect_json 'len(d["run_ids"])' 1 "no second run was made"
if [[ "$(started_times)" == 1 ]]; then pass "the job did not run again"
else fail "the job started $(started_times) times"; fi

kill -TERM "$serve_pid"
if wait_exit "$serve_pid" 120 && [[ "$WAIT_RC" == 0 ]]; then pass "SIGTERM stops the server"
else fail "the server did not stop cleanly"; fi

itest_end
