#!/usr/bin/env bash
# Two `kiln serve` replicas on one PostgreSQL database: the same delivery sent to both is
# handled once; pushes split across both are each run exactly once; a replica killed with -9
# while it runs a trigger has it requeued and run to completion by the other (heartbeats and
# claims in the database, docs/scale-out.md); every replica's API shows every trigger, and a
# replica streams the live log of a run another replica is running.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/postgres_lib.sh"
itest_begin postgres_replicas
postgres_begin

secret="webhook-secret-$RANDOM" token="api-token-$RANDOM"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
events="$ITEST_DIR/events.txt"
: >"$events"
make_repo "$repo"
# Each run says which run it is; while $ITEST_DIR/hold exists it waits.
write_workflow "$repo" ci.yml <<EOF2
name: CI
on: push
jobs:
  build:
    runs-on: [self-hosted, linux]
    steps:
      - run: |
          echo "start \$KILN_RUN_ID" >>"$events"
          echo "live-line of run \$KILN_RUN_ID"
          while [ -e "$ITEST_DIR/hold" ]; do sleep 0.1; done
EOF2
commit_all "$repo" "a holdable workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"

declare -A pid base
start_replica() {  # start_replica NAME
  cat >"$ITEST_DIR/$1.yml" <<EOF2
serve:
  listen: 127.0.0.1:0
  store: "$PG_URL"
  work_dir: $1-work
  shutdown_grace: 1m
  max_concurrent_runs: 4
  api_tokens: [$token]
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
EOF2
  rm -f "$ITEST_DIR/$1.port"
  "$KILN" serve --config "$ITEST_DIR/$1.yml" --port-file "$ITEST_DIR/$1.port" \
    >>"$ITEST_DIR/$1.out" 2>>"$ITEST_DIR/$1.err" &
  pid[$1]=$!
  itest_track_pid "${pid[$1]}"
  wait_until 60 test -s "$ITEST_DIR/$1.port" || {
    cat "$ITEST_DIR/$1.err" >&2
    itest_die "replica $1 did not start listening"
  }
  base[$1]="http://127.0.0.1:$(cat "$ITEST_DIR/$1.port")"
}
deliver_push() {  # deliver_push REPLICA DELIVERY [BODY-ID]: prints the HTTP status
  local body="$ITEST_DIR/push-${3:-$2}.json"
  cat >"$body" <<EOF2
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"},
 "kiln_test_delivery": "${3:-$2}"}
EOF2
  local signature="sha256=$(openssl dgst -sha256 -hmac "$secret" <"$body" | sed 's/^.*= //')"
  curl -sS -o /dev/null -w '%{http_code}' -H "X-GitHub-Event: push" -H "X-GitHub-Delivery: $2" \
    -H "X-Hub-Signature-256: $signature" -H 'Content-Type: application/json' \
    --data-binary "@$body" "${base[$1]}/webhooks/github"
}
sql_is() { [[ "$(psql_value "$1")" == "$2" ]]; }

start_replica a
start_replica b

# ---- one delivery sent to both replicas: handled once -----------------------------------
deliver_push a same-1 >/dev/null
deliver_push b same-1 >/dev/null
check "the delivery sent to both replicas is one trigger" sql_is "SELECT COUNT(*) FROM triggers" 1
check "and it finishes" wait_until 120 sql_is "SELECT COUNT(*) FROM triggers WHERE status = 'finished'" 1
check "with one run" sql_is "SELECT COUNT(*) FROM runs" 1

# ---- pushes split across the replicas: each run exactly once ----------------------------
for i in $(seq 1 10); do
  if (( i % 2 )); then deliver_push a "split-$i" >/dev/null; else deliver_push b "split-$i" >/dev/null; fi
done
check "the 10 pushes are 10 more triggers" sql_is "SELECT COUNT(*) FROM triggers" 11
check "all finish" wait_until 300 sql_is "SELECT COUNT(*) FROM triggers WHERE status = 'finished'" 11
check "each ran once: 11 runs for 11 triggers" sql_is "SELECT COUNT(*) FROM runs" 11
check "every trigger names one run" sql_is "SELECT COUNT(*) FROM triggers WHERE run_ids NOT LIKE '[%,%]' AND run_ids LIKE '[%]'" 11
claimers="$(psql_value "SELECT COUNT(DISTINCT claimed_by) FROM triggers")"
echo "  (the 11 triggers were claimed by $claimers replica(s))"
curl -sS -H "Authorization: Bearer $token" "${base[b]}/api/triggers?limit=0" >"$ITEST_DIR/b-triggers.json"
check "replica b's API lists every trigger" test "$(json_eval "$ITEST_DIR/b-triggers.json" 'len(d["triggers"])')" = 11

# ---- kill -9 of the replica running a trigger: the other runs it ------------------------
touch "$ITEST_DIR/hold"
deliver_push a crash-1 >/dev/null
crash="$(psql_value "SELECT id FROM triggers WHERE delivery = 'crash-1'")"
check "the held trigger is claimed and runs" wait_until 120 sql_is "SELECT status FROM triggers WHERE id = $crash" running
holder="$(psql_value "SELECT claimed_by FROM triggers WHERE id = $crash")"
victim=a
[[ "$holder" == *":${pid[b]}:"* ]] && victim=b
survivor=b
[[ $victim == b ]] && survivor=a
check "the job started" wait_until 60 test "$(grep -c '^start' "$events")" -ge 12
# The other replica streams the running job's log live (GET /api/runs/ID/events reads the store).
held_run="$(psql_value "SELECT run_ids FROM triggers WHERE id = $crash" | tr -d '[] ')"
live_log_has_line() {
  curl -sS -N --max-time 2 -H "Authorization: Bearer $token" "${base[$survivor]}/api/runs/$held_run/events" >"$ITEST_DIR/live.txt" 2>/dev/null || true
  grep -q "live-line of run $held_run" "$ITEST_DIR/live.txt"
}
check "replica $survivor streams the live log of run $held_run, which replica $victim is running" \
  wait_until 30 live_log_has_line
kill -9 "${pid[$victim]}"
wait_exit "${pid[$victim]}" 30 || itest_die "the killed replica did not end"
rm -f "$ITEST_DIR/hold"
check "replica $survivor requeues and finishes the killed replica's trigger" \
  wait_until 120 sql_is "SELECT status FROM triggers WHERE id = $crash" finished
after="$(psql_value "SELECT claimed_by FROM triggers WHERE id = $crash")"
check "claimed by the survivor now" test "$after" != "$holder"
check "its first run is interrupted" sql_is "SELECT COUNT(*) FROM runs WHERE status = 'interrupted'" 1
check "no trigger is lost or doubled: 12 triggers, 11 + 2 runs" sql_is "SELECT COUNT(*) || ' ' || (SELECT COUNT(*) FROM runs) FROM triggers" "12 13"

kill -TERM "${pid[$survivor]}"
if wait_exit "${pid[$survivor]}" 120 && [[ "$WAIT_RC" == 0 ]]; then pass "SIGTERM stops replica $survivor"
else fail "replica $survivor did not stop cleanly (exit ${WAIT_RC:-none})"; tail -20 "$ITEST_DIR/$survivor.err" >&2; fi
itest_end
