#!/usr/bin/env bash
# kiln serve's clock trigger (src/kiln/server/schedule_clock.h):
# - a `cron:` with `timezone: Europe/Berlin` fires at the Berlin wall time (09:30 CEST is
#   07:30 UTC), a `cron:` without a zone at the UTC time (not yet at 07:30 UTC);
# - two workflows with the same schedule each get their own trigger, and each trigger runs only
#   its own workflow, on the default branch, with github.event.schedule the cron text;
# - a workflow file with an error is logged once and schedules nothing, the others still fire;
# - a restart within the firing's minute does not fire it twice (delivery
#   schedule:REPO:FILE:INDEX:UNIX-SECONDS).
# The server's clock starts just before the firing (KILN_TEST_CLOCK_START, a test hook), so
# nothing waits for a real 09:30.
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_schedule
RC=0

secret="webhook-secret-$RANDOM"
token="api-token-$RANDOM"
auth="Authorization: Bearer $token"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
for name in berlin also-berlin; do
  write_workflow "$repo" "$name.yml" <<EOF2
name: $name
on:
  schedule:
    - cron: '30 9 * * *'
      timezone: Europe/Berlin
jobs:
  nightly:
    runs-on: linux
    steps:
      - run: echo "FIRED-$name schedule=\${{ github.event.schedule }} ref=\${{ github.ref }} event=\${{ github.event_name }}"
EOF2
done
write_workflow "$repo" utc.yml <<'EOF2'
name: utc
on:
  schedule:
    - cron: '30 9 * * *'
jobs:
  nightly:
    runs-on: linux
    steps:
      - run: echo "FIRED-utc"
EOF2
write_workflow "$repo" broken.yml <<'EOF2'
name: broken
on:
  schedule:
    - cron: '30 9 * * *'
      timezone: Europe/Berlin
jobs:
  nightly:
    runs-on: linux
    stepz: []
EOF2
commit_all "$repo" "scheduled workflows"
mkdir -p "$(dirname "$bare")"
git init -q --bare -b main "$bare"
git -C "$repo" push -q "$bare" HEAD:refs/heads/main
main_sha="$(git -C "$repo" rev-parse HEAD)"

cat >"$ITEST_DIR/kiln.yml" <<EOF2
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  max_concurrent_runs: 2
  shutdown_grace: 10m
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
EOF2
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
# 09:29:57 in Berlin on a summer day (CEST, UTC+2).
clock_start=2026-07-01T07:29:57Z
firing="$(python3 -c 'import calendar; print(calendar.timegm((2026, 7, 1, 7, 30, 0)))')"
start_server() {
  rm -f "$ITEST_DIR/port"
  KILN_TEST_CLOCK_START="$clock_start" "$KILN" serve --config "$ITEST_DIR/kiln.yml" \
    --port-file "$ITEST_DIR/port" >>"$ITEST_DIR/serve.out" 2>>"$ITEST_DIR/serve.err" &
  SERVE_PID=$!
  itest_track_pid "$SERVE_PID"
  wait_until 60 test -s "$ITEST_DIR/port" || {
    cat "$ITEST_DIR/serve.err" >&2
    itest_die "kiln serve did not start listening"
  }
  SERVE_BASE="http://127.0.0.1:$(cat "$ITEST_DIR/port")"
}
schedule_deliveries() {
  http GET "/api/triggers?limit=0" "" "$auth"
  json_eval - '" ".join(sorted(t["delivery"] for t in d["triggers"] if t["delivery"].startswith("schedule:")))'
}
two_fired() { [[ "$(schedule_deliveries | wc -w)" == 2 ]]; }
trigger_of() {
  http GET "/api/triggers?limit=0" "" "$auth"
  json_eval - "[t['id'] for t in d['triggers'] if t['delivery'] == '$1'][0]"
}
server_log() { cat "$ITEST_DIR/serve.out" "$ITEST_DIR/serve.err"; }

start_server
check "both Berlin schedules fire at 09:30 Berlin time (07:30 UTC)" wait_until 60 two_fired
deliveries="$(schedule_deliveries)"
expect_contains "$deliveries" "schedule:acme/widgets:.github/workflows/berlin.yml:0:$firing" \
  "the firing's delivery names the repository, the file, the line and the minute"
expect_contains "$deliveries" "schedule:acme/widgets:.github/workflows/also-berlin.yml:0:$firing" \
  "the second workflow with the same schedule gets its own trigger"
expect_not_contains "$deliveries" "utc.yml" "the same cron without a zone has not fired (09:30 UTC is later)"
for name in berlin also-berlin; do
  id="$(trigger_of "schedule:acme/widgets:.github/workflows/$name.yml:0:$firing")"
  check "the $name trigger finishes" trigger_done "$id" finished
  http GET "/api/triggers/$id" "" "$auth"
  expect_json 'd["event"]' schedule "the $name trigger is a schedule event"
  expect_json 'd["sha"]' "$main_sha" "the $name trigger runs the default branch's commit"
  expect_json 'len(d["run_ids"])' 1 "the $name trigger runs its own workflow only"
  run="$(json_eval - 'd["run_ids"][0]')"
  http GET "/api/runs/$run/logs" "" "$auth"
  expect_contains "$OUT" "FIRED-$name schedule=30 9 * * * ref=refs/heads/main event=schedule" \
    "the $name run sees github.event.schedule, github.ref and github.event_name"
done
log="$(server_log)"
expect_contains "$log" "broken.yml" "the workflow with an error is named in the server's log"
if [[ "$(grep -c "broken.yml.*schedules do not fire" <<<"$log")" == 1 ]]; then
  pass "the error is logged once"
else
  fail "the error is logged $(grep -c "broken.yml.*schedules do not fire" <<<"$log") times"
fi

serve_stop
# The same start time again: the 09:30 firing comes round once more and must not run twice.
start_server
already_logged() {
  [[ "$(server_log | grep -c "this firing has its trigger already")" -ge 2 ]]
}
check "after a restart within the minute the clock sees both firings again" wait_until 60 already_logged
if [[ "$(schedule_deliveries | wc -w)" == 2 ]]; then
  pass "a restart within the firing's minute makes no second trigger"
else
  fail "schedule triggers after the restart: $(schedule_deliveries)"
fi
serve_stop

# kiln run --list shows each schedule line's zone and its next fire times (in UTC).
listed="$("$KILN" run -C "$repo" -W "$repo/.github/workflows/berlin.yml" --list 2>&1;
  "$KILN" run -C "$repo" -W "$repo/.github/workflows/utc.yml" --list 2>&1)"
expect_match "$listed" "schedule +\.github/workflows/berlin.yml +'30 9 \* \* \*' +Europe/Berlin: next [0-9-]+ 0[78]:30 UTC" \
  "kiln run --list shows a zoned schedule's next firing in UTC"
expect_match "$listed" "schedule +\.github/workflows/utc.yml +'30 9 \* \* \*' +UTC: next [0-9-]+ 09:30 UTC" \
  "kiln run --list shows a UTC schedule's next firing"
itest_end
