#!/usr/bin/env bash
# kiln serve's other ways in and its server-wide concurrency groups:
# - a signed workflow_dispatch webhook runs the named workflow_dispatch workflow on the ref's
#   commit with its inputs in inputs.* and github.event.inputs.*;
# - polling a local bare repository: the first sight of a branch runs nothing, a new commit
#   becomes a push trigger (delivery poll:REPO:REF:SHA), a commit pushed while the server was
#   down triggers after the restart and nothing triggers twice;
# - concurrency groups hold across triggers: with cancel-in-progress a second push cancels the
#   first's run; without it the newer run waits, and a third push cancels the waiting one.
# - `kiln cancel RUN --server URL` stops a running run: it ends cancelled, its step never finishes;
#   `kiln watch RUN --server URL` follows it (exit 1 cancelled, 0 for a run that succeeded);
#   `kiln runs --server URL` lists the served runs; `kiln logs RUN --server URL [--follow]` reads
#   a served run's log.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_triggers
RC=0  # expect_json shows the last kiln call on failure; this test makes HTTP calls instead

secret="webhook-secret-$RANDOM"
token="api-token-$RANDOM"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
events="$ITEST_DIR/events.txt"
: >"$events"
make_repo "$repo"
write_workflow "$repo" dispatch.yml <<'EOF2'
name: Dispatch
on:
  workflow_dispatch:
    inputs:
      target: {required: true, type: string}
      dry: {type: boolean, default: false}
jobs:
  go:
    runs-on: linux
    steps:
      - run: echo "DISPATCH target=${{ inputs.target }} dry=${{ inputs.dry }} event=${{ github.event.inputs.target }} ref=${{ github.ref }} sha=${{ github.sha }}"
      # More lines than one page of the logs API, for kiln logs --server's paging.
      - run: seq -f 'PAGE-LINE-%g' 1 12001
EOF2
write_workflow "$repo" other-dispatch.yml <<'EOF2'
name: Other dispatch
on:
  workflow_dispatch:
    inputs:
      target: {type: string, default: none}
jobs:
  other:
    runs-on: linux
    steps:
      - run: echo "OTHER-DISPATCH-RAN"
EOF2
write_workflow "$repo" polled.yml <<'EOF2'
name: Polled
on:
  push:
    branches: [polled]
jobs:
  polled:
    runs-on: linux
    steps:
      - run: echo "POLLED-PUSH before=${{ github.event.before }} after=${{ github.sha }}"
EOF2
# Gated jobs: each writes "start SHA", waits for the gate file of its branch, writes "end SHA".
for branch in cancel queue clicancel; do
  if [[ $branch == cancel ]]; then cancel_line="  cancel-in-progress: true"; else cancel_line=""; fi
  write_workflow "$repo" "$branch.yml" <<EOF2
name: Deploy $branch
on:
  push:
    branches: [$branch]
concurrency:
  group: deploy-\${{ github.ref }}
$cancel_line
jobs:
  deploy:
    runs-on: linux
    steps:
      - run: |
          echo "start \${{ github.sha }}" >>"$events"
          while [ ! -e "$ITEST_DIR/gate-$branch" ]; do sleep 0.1; done
          echo "end \${{ github.sha }}" >>"$events"
EOF2
done
commit_all "$repo" "workflows"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
main_sha="$(git -C "$repo" rev-parse HEAD)"
git -C "$repo" push -q "$bare" HEAD:refs/heads/polled
first_polled="$main_sha"
# new_commit BRANCH: a commit on top of the current one, pushed to BRANCH; prints its sha.
new_commit() {
  git -C "$repo" commit -q --allow-empty -m "on $1"
  git -C "$repo" push -q "$bare" "HEAD:refs/heads/$1"
  git -C "$repo" rev-parse HEAD
}

cat >"$ITEST_DIR/kiln.yml" <<EOF2
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  max_concurrent_runs: 4
  shutdown_grace: 10m
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
      poll:
        branches: [polled]
        interval: 1s
EOF2
start_server() {
  rm -f "$ITEST_DIR/port"
  "$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
    >>"$ITEST_DIR/serve.out" 2>>"$ITEST_DIR/serve.err" &
  serve_pid=$!
  itest_track_pid "$serve_pid"
  wait_until 60 test -s "$ITEST_DIR/port" || {
    cat "$ITEST_DIR/serve.err" >&2
    itest_die "kiln serve did not start listening"
  }
  base="http://127.0.0.1:$(cat "$ITEST_DIR/port")"
  SERVE_BASE="$base"
}
stop_server() {
  kill -TERM "$serve_pid"
  if wait_exit "$serve_pid" 120 && [[ "$WAIT_RC" == 0 ]]; then pass "SIGTERM stops the server"
  else fail "the server did not stop cleanly"; fi
}
# The API and webhook helpers (http, expect_status, deliver, trigger_done) of serve_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
SERVE_SECRET="$secret"
push_body() {  # push_body FILE BRANCH SHA
  cat >"$1" <<EOF2
{"ref": "refs/heads/$2", "before": "0000000000000000000000000000000000000000",
 "after": "$3", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF2
}
auth="Authorization: Bearer $token"
# run_of TRIGGER [INDEX]: the trigger's run id (the last one by default).
run_of() {
  http GET "/api/triggers/$1"
  json_eval - "d['run_ids'][${2:--1}]"
}
trigger_has_run() {
  http GET "/api/triggers/$1"
  [[ "$(json_eval - 'len(d["run_ids"] or [])')" -ge 1 ]]
}
logs_of_run() {
  http GET "/api/runs/$1/logs" "" "$auth"
  echo "$OUT"
}
poll_triggers() {
  http GET /api/triggers
  json_eval - '[t["id"] for t in d["triggers"] if t["delivery"].startswith("poll:")]'
}
has_poll_trigger_for() {
  http GET /api/triggers
  [[ "$(json_eval - "[t['id'] for t in d['triggers'] if t['delivery'] == 'poll:acme/widgets:refs/heads/polled:$1']")" != "[]" ]]
}

start_server

# ---- workflow_dispatch ----------------------------------------------------------------------
cat >"$ITEST_DIR/dispatch.json" <<'EOF2'
{"ref": "main", "workflow": ".github/workflows/dispatch.yml",
 "inputs": {"target": "gpu-7", "dry": true},
 "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF2
deliver "$ITEST_DIR/dispatch.json" workflow_dispatch dispatch-1
expect_status 202 "a signed workflow_dispatch is accepted"
dispatch_trigger="$(json_eval - 'd["trigger"]')"
http GET "/api/triggers/$dispatch_trigger"
expect_json 'd["event"]' workflow_dispatch "the trigger is a workflow_dispatch"
expect_json 'd["sha"]' "$main_sha" "the dispatch runs the ref's current commit"
check "the dispatch's trigger finishes" trigger_done "$dispatch_trigger" finished
expect_json 'len(d["run_ids"])' 1 "only the named workflow ran (not the other dispatch workflow)"
dispatch_run="$(run_of "$dispatch_trigger")"
http GET "/api/runs/$dispatch_run"
expect_json 'd["name"]' Dispatch "the run is of the dispatched workflow"
expect_json 'd["status"]' success "the dispatched run succeeded"
expect_contains "$(logs_of_run "$dispatch_run")" \
  "DISPATCH target=gpu-7 dry=true event=gpu-7 ref=refs/heads/main sha=$main_sha" \
  "inputs reach inputs.* and github.event.inputs.*"
kiln logs "$dispatch_run" --server "$SERVE_BASE" --token "$token"
expect_rc 0 "kiln logs --server prints a served run's log"
expect_contains "$OUT" "DISPATCH target=gpu-7 dry=true" "with the step's lines"
expect_contains "$OUT" "== go (success) ==" "under the job's header"
served_log="$OUT"
expect_contains "$served_log" "PAGE-LINE-12001" "the last of the 12,001 lines, three pages in"
kiln logs "$dispatch_run" --store "$ITEST_DIR/state/kiln.db"
expect_rc 0 "kiln logs of the same run from the server's store"
if [[ "$served_log" == "$OUT" ]]; then
  pass "kiln logs --server prints what the local kiln logs prints ($(wc -l <<<"$OUT") lines)"
else
  fail "kiln logs --server differs from the local kiln logs: $(diff <(echo "$served_log") <(echo "$OUT") | head -5)"
fi
if [[ "$(grep -c '^PAGE-LINE-' <<<"$served_log")" == 12001 ]]; then
  pass "every paged line is printed once"
else
  fail "paged lines: $(grep -c '^PAGE-LINE-' <<<"$served_log") of 12001"
fi
kiln logs "$dispatch_run" go --server "$SERVE_BASE" --token "$token" --timestamps
expect_rc 0 "kiln logs --server of one job, with timestamps"
expect_contains "$OUT" "Z DISPATCH target=gpu-7" "each line after its stored time"
kiln logs "$dispatch_run" nosuchjob --server "$SERVE_BASE" --token "$token"
expect_rc 2 "kiln logs --server of a job the run does not have is refused"
kiln logs "$dispatch_run" --server "$SERVE_BASE" --token wrong
expect_rc 2 "kiln logs --server with a wrong token is refused"

cat >"$ITEST_DIR/dispatch-all.json" <<'EOF2'
{"ref": "refs/heads/main", "inputs": {"target": "all"},
 "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF2
deliver "$ITEST_DIR/dispatch-all.json" workflow_dispatch dispatch-2
expect_status 202 "a workflow_dispatch without a workflow name is accepted"
all_trigger="$(json_eval - 'd["trigger"]')"
check "it finishes" trigger_done "$all_trigger" finished
expect_json 'len(d["run_ids"])' 2 "without a name, every workflow_dispatch workflow runs"

cat >"$ITEST_DIR/dispatch-bad.json" <<'EOF2'
{"ref": "no-such-branch", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "a"}}
EOF2
cat >"$ITEST_DIR/dispatch-undeclared.json" <<'EOF2'
{"ref": "main", "workflow": ".github/workflows/dispatch.yml", "inputs": {"target": "x", "colour": "red"},
 "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF2
deliver "$ITEST_DIR/dispatch-undeclared.json" workflow_dispatch dispatch-5
undeclared="$(json_eval - 'd["trigger"]')"
check "a dispatch with an input the workflow does not declare fails" \
  trigger_done "$undeclared" failed
expect_contains "$OUT" "unexpected input 'colour'" "the trigger's message names the input"
deliver "$ITEST_DIR/dispatch-bad.json" workflow_dispatch dispatch-3
expect_status 422 "a workflow_dispatch of a ref the remote lacks gets 422"
cat >"$ITEST_DIR/dispatch-escape.json" <<'EOF2'
{"ref": "main", "workflow": "../../../etc/passwd",
 "repository": {"full_name": "acme/widgets"}, "sender": {"login": "a"}}
EOF2
deliver "$ITEST_DIR/dispatch-escape.json" workflow_dispatch dispatch-4
expect_status 400 "a workflow path outside .github/workflows gets 400"

# ---- polling --------------------------------------------------------------------------------
first_sight() { cat "$ITEST_DIR/serve.out" "$ITEST_DIR/serve.err" | grep -q "first sight of refs/heads/polled at $first_polled"; }
check "the poller records the first sight of the watched branch" wait_until 60 first_sight
sleep 2  # two more rounds of polling
expect_contains "$(poll_triggers)" "[]" "the first sight triggers nothing"
polled_1="$(new_commit polled)"
check "a new commit on the watched branch becomes a trigger" wait_until 60 has_poll_trigger_for "$polled_1"
http GET /api/triggers
polled_trigger="$(json_eval - "[t['id'] for t in d['triggers'] if t['delivery'].endswith('$polled_1')][0]")"
check "the polled push's trigger finishes" trigger_done "$polled_trigger" finished
expect_json 'd["event"]' push "a polled commit is a push"
polled_run="$(run_of "$polled_trigger")"
expect_contains "$(logs_of_run "$polled_run")" "POLLED-PUSH before=$first_polled after=$polled_1" \
  "the push's before and after are the last seen and the new commit"

stop_server
polled_2="$(new_commit polled)"
start_server
check "a commit pushed while the server was down triggers after the restart" \
  wait_until 60 has_poll_trigger_for "$polled_2"
sleep 2  # more rounds of polling, which must add nothing
http GET /api/triggers
expect_json 'len([t for t in d["triggers"] if t["delivery"].startswith("poll:")])' 2 \
  "each polled commit triggered once, none twice"

# ---- concurrency groups across triggers: cancel-in-progress --------------------------------
cancel_1="$(new_commit cancel)"
cancel_2="$(new_commit cancel)"
push_body "$ITEST_DIR/c1.json" cancel "$cancel_1"
push_body "$ITEST_DIR/c2.json" cancel "$cancel_2"
deliver "$ITEST_DIR/c1.json" push cancel-1
c1="$(json_eval - 'd["trigger"]')"
check "the first push's job starts" wait_until 120 grep -q "start $cancel_1" "$events"
deliver "$ITEST_DIR/c2.json" push cancel-2
c2="$(json_eval - 'd["trigger"]')"
check "the first push's trigger ends (its run cancelled)" trigger_done "$c1" finished
c1_run="$(run_of "$c1")"
http GET "/api/runs/$c1_run"
expect_json 'd["status"]' cancelled "cancel-in-progress cancelled the older run of the group"
check "the newer push's job starts after the older one was cancelled" \
  wait_until 120 grep -q "start $cancel_2" "$events"
touch "$ITEST_DIR/gate-cancel"
check "the newer push's trigger finishes" trigger_done "$c2" finished
http GET "/api/runs/$(run_of "$c2")"
expect_json 'd["status"]' success "the newer run of the group succeeded"
if grep -q "end $cancel_1" "$events"; then fail "the cancelled run's step went on to the end"
else pass "the cancelled run's step never finished"; fi

# ---- kiln cancel RUN --server: a running run stopped from the command line ------------------
stop_1="$(new_commit clicancel)"
push_body "$ITEST_DIR/s1.json" clicancel "$stop_1"
deliver "$ITEST_DIR/s1.json" push clicancel-1
s1="$(json_eval - 'd["trigger"]')"
check "the job to cancel from the CLI starts" wait_until 120 grep -q "start $stop_1" "$events"
s1_run="$(run_of "$s1")"
"$KILN" watch "$s1_run" --server "$SERVE_BASE" --interval 0.2 >"$ITEST_DIR/watch.out" 2>&1 &
watch_pid=$!
itest_track_pid "$watch_pid"
check "kiln watch shows the running job" wait_until 60 grep -qE "^deploy.*: running$" "$ITEST_DIR/watch.out"
"$KILN" logs "$s1_run" --follow --server "$SERVE_BASE" --token "$token" >"$ITEST_DIR/follow.out" 2>&1 &
follow_pid=$!
itest_track_pid "$follow_pid"
sleep 1
kiln cancel "$s1_run" --server "$SERVE_BASE" --token "$token"
expect_rc 0 "kiln cancel of a running run is accepted"
expect_contains "$OUT" "\"cancelling\"" "and prints the run it cancels"
check "the cancelled run's trigger ends cancelled" trigger_done "$s1" cancelled
http GET "/api/runs/$s1_run"
expect_json 'd["status"]' cancelled "kiln cancel --server cancelled the running run"
if wait_exit "$watch_pid" 60 && [[ "$WAIT_RC" == 1 ]]; then
  pass "kiln watch ends with exit 1 when the run was cancelled"
else fail "kiln watch of the cancelled run: exit ${WAIT_RC:-none} (want 1)"; fi
expect_contains "$(cat "$ITEST_DIR/watch.out")" "run $s1_run: cancelled" "kiln watch says how the run ended"
if wait_exit "$follow_pid" 60 && [[ "$WAIT_RC" == 0 ]]; then
  pass "kiln logs --follow --server ends when the run ends"
else fail "kiln logs --follow --server of the cancelled run: exit ${WAIT_RC:-none} (want 0)"; fi
expect_contains "$(cat "$ITEST_DIR/follow.out")" "== deploy cancelled ==" "and says how the job ended"
kiln watch 99999 --server "$SERVE_BASE"
expect_rc 2 "kiln watch of an unknown run is refused"
kiln watch "$s1_run" --server "http://127.0.0.1:1"
expect_rc 3 "kiln watch of an unreachable server exits 3"
kiln watch "$s1_run" --server "$SERVE_BASE" --interval 0
expect_rc 2 "kiln watch --interval 0 is refused"
touch "$ITEST_DIR/gate-clicancel"
sleep 0.5
if grep -q "end $stop_1" "$events"; then fail "the run cancelled from the CLI went on to the end"
else pass "the run cancelled from the CLI never finished its step"; fi

# ---- without cancel-in-progress: the newer waits; a third replaces the pending one ---------
queue_1="$(new_commit queue)"
queue_2="$(new_commit queue)"
queue_3="$(new_commit queue)"
for n in 1 2 3; do
  sha_var="queue_$n"
  push_body "$ITEST_DIR/q$n.json" queue "${!sha_var}"
done
deliver "$ITEST_DIR/q1.json" push queue-1
q1="$(json_eval - 'd["trigger"]')"
check "the first queued push's job starts" wait_until 120 grep -q "start $queue_1" "$events"
deliver "$ITEST_DIR/q2.json" push queue-2
q2="$(json_eval - 'd["trigger"]')"
check "the second push has its run (waiting for the group)" wait_until 120 trigger_has_run "$q2"
sleep 1
if grep -q "start $queue_2" "$events"; then fail "the second run started while the first held the group"
else pass "the second run waits while the first holds the group"; fi
deliver "$ITEST_DIR/q3.json" push queue-3
q3="$(json_eval - 'd["trigger"]')"
check "the pending second run ends when a third arrives" trigger_done "$q2" finished
http GET "/api/runs/$(run_of "$q2")"
expect_json 'd["status"]' cancelled "the replaced pending run is cancelled"
http GET "/api/runs/$(run_of "$q1")"
expect_json 'd["status"]' running "the holder runs on"
touch "$ITEST_DIR/gate-queue"
check "the first queued push finishes" trigger_done "$q1" finished
check "the third push finishes" trigger_done "$q3" finished
http GET "/api/runs/$(run_of "$q1")"
expect_json 'd["status"]' success "the holder succeeded"
kiln watch "$(run_of "$q1")" --server "$SERVE_BASE"
expect_rc 0 "kiln watch of a run that succeeded exits 0"
expect_contains "$OUT" "run $(run_of "$q1"): success" "and says so"
q1_run="$(run_of "$q1")"
kiln runs --server "$SERVE_BASE" -n 0 --json
expect_rc 0 "kiln runs --server lists the served runs"
expect_json_of_out() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$ITEST_DIR/last.out"; }
if [[ "$(expect_json_of_out "[r['status'] for r in d if r['id']==$q1_run]")" == "['success']" ]]; then
  pass "kiln runs --server --json has the run with its status"
else fail "kiln runs --server --json lacks run $q1_run as success"; show_last; fi
kiln runs --server "$SERVE_BASE"
expect_contains "$OUT" "Deploy queue" "kiln runs --server prints the table with the workflow's name"
kiln runs --server "http://127.0.0.1:1"
expect_rc 3 "kiln runs of an unreachable server exits 3"
http GET "/api/runs/$(run_of "$q3")"
expect_json 'd["status"]' success "the third run succeeded after it"
order="$(grep -E "$queue_1|$queue_2|$queue_3" "$events" | tr '\n' ' ')"
expect_contains "$order" "start $queue_1 end $queue_1 start $queue_3 end $queue_3" \
  "the third run started only after the first ended, and the second never started"

stop_server
itest_end
