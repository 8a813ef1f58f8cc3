#!/usr/bin/env bash
# kiln.yml priority: across the runs of kiln serve (issue 24): a push to main holds the one
# simulated GPU; a pull request's GPU job queues, then a second push's. When the GPU comes free
# the push goes first, though the pull request waited longer: the triggers' engine calls share
# one queue of waiting GPU jobs (engine/schedule/gpu_queue.h). Each job keeps its class and its
# queue time.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
itest_begin priority_serve

SERVE_SECRET="webhook-secret-$RANDOM"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
events="$ITEST_DIR/events.txt"
: >"$events"
cp "$KILN_SOURCE_DIR/tests/data/gpu/one-h200.json" "$ITEST_DIR/gpus.json"
make_repo "$repo"
# The job takes the one GPU, says so, and waits for the gate.
write_workflow "$repo" ci.yml <<EOF
name: CI
on: [push, pull_request]
jobs:
  train:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          echo "start \${{ github.event_name }}" >>"$events"
          while [ ! -e "$ITEST_DIR/gate" ]; do sleep 0.1; done
EOF
commit_all "$repo" "a gated GPU workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"
git -C "$repo" push -q "$bare" "HEAD:refs/pull/7/head"

cat >"$ITEST_DIR/kiln.yml" <<EOF
priority:
  classes:
    - {name: main, branch: main, event: push}
    - {name: pull-request, event: pull_request}
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  max_concurrent_runs: 3
  shutdown_grace: 10m
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $SERVE_SECRET
EOF
rm -f "$ITEST_DIR/port"
"$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
  --simulate-gpus "$ITEST_DIR/gpus.json" >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
SERVE_PID=$!
itest_track_pid "$SERVE_PID"
wait_until 60 test -s "$ITEST_DIR/port" || {
  cat "$ITEST_DIR/serve.err" >&2
  itest_die "kiln serve did not start listening"
}
SERVE_BASE="http://127.0.0.1:$(cat "$ITEST_DIR/port")"

push() {  # push DELIVERY: a push of main; the trigger's id in $trigger
  cat >"$ITEST_DIR/$1.json" <<EOF
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"},
 "kiln_test_delivery": "$1"}
EOF
  deliver "$ITEST_DIR/$1.json" push "$1"
  expect_status 202 "push $1 accepted"
  trigger="$(json_eval - 'd["trigger"]')"
}
run_of() {  # run_of TRIGGER: its run's id, once it has one
  http GET "/api/triggers/$1"
  json_eval - 'd["run_ids"][0] if d["run_ids"] else ""'
}
job_queued() {  # job_queued TRIGGER: its run's train job is in the queue
  local run
  run="$(run_of "$1")"
  [[ -n "$run" ]] || return 1
  http GET "/api/runs/$run"
  [[ "$(json_eval - '[j["status"] for j in d["jobs"]]')" == '["queued"]' ]]
}
started() { [[ "$(wc -l <"$events")" -ge "$1" ]]; }

push first
first="$trigger"
check "the first push's job takes the GPU" wait_until 120 started 1

cat >"$ITEST_DIR/pull.json" <<EOF
{"action": "opened", "number": 7, "repository": {"full_name": "acme/widgets"},
 "sender": {"login": "alice"},
 "pull_request": {"number": 7, "user": {"login": "alice"},
   "head": {"sha": "$sha", "ref": "topic", "repo": {"full_name": "acme/widgets"}},
   "base": {"ref": "main", "sha": "$sha", "repo": {"full_name": "acme/widgets"}}}}
EOF
deliver "$ITEST_DIR/pull.json" pull_request pull-1
expect_status 202 "the pull request accepted"
pull="$(json_eval - 'd["trigger"]')"
check "the pull request's job waits for the GPU" wait_until 120 job_queued "$pull"

push second
second="$trigger"
check "the second push's job waits for the GPU" wait_until 120 job_queued "$second"

touch "$ITEST_DIR/gate"
for t in "$first" "$pull" "$second"; do
  check "trigger $t finishes" trigger_done "$t" finished
done
expect_eq "$(paste -sd' ' "$events")" "start push start push start pull_request" \
  "the second push took the GPU before the pull request that waited longer"

queue_of() {  # queue_of TRIGGER: the train job's queue record, as JSON
  http GET "/api/runs/$(run_of "$1")"
  "$KILN" report --store "$ITEST_DIR/state/kiln.db" "$(json_eval - 'd["id"]')" --format json \
    >"$ITEST_DIR/last.out"
  OUT="$(cat "$ITEST_DIR/last.out")"
}
queue_of "$pull"
expect_json 'd["jobs"][0]["queue"]["priority"]' pull-request "the pull request's class"
expect_json 'd["jobs"][0]["queue"]["seconds"] > 0' true "it waited"
expect_json '"gpus" in d["jobs"][0]["queue"]["waited"]' true "for the GPU"
queue_of "$second"
expect_json 'd["jobs"][0]["queue"]["priority"]' main "the push's class"

serve_stop
itest_end
