#!/usr/bin/env bash
# The API's errors through the real `kiln serve` (server/reply.h): one HTTP status per error
# code on every route, ids in paths that fit no record are 404 naming the id (never an
# exception, never "id 0"), and a request the state refuses (approve a trigger that is not
# waiting, cancel a finished one: invalid_input) is 409. And the server's git (fetch,
# checkout, ls-remote) ignores a caller's GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_errors
RC=0  # expect_json shows the last kiln call on failure; this test makes HTTP calls instead
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"

repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF2'
on: push
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo built
EOF2
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
# The server runs as if started from a git hook of another repository: GIT_DIR & co. point at a
# decoy. Its fetches, checkouts and polls must work on the repositories they name regardless.
decoy="$ITEST_DIR/decoy"
make_repo "$decoy"
export GIT_DIR="$decoy/.git" GIT_WORK_TREE="$decoy" GIT_INDEX_FILE="$decoy/.git/index"
serve_start acme/widgets "$bare" "secret-$RANDOM" "token-$RANDOM"
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
auth="Authorization: Bearer $SERVE_TOKEN"

huge=99999999999999999999  # 20 digits: more than 64 bits
for path in "/api/runs/$huge" "/api/runs/$huge/telemetry" "/api/runs/$huge/report"; do
  http GET "$path"
  expect_status 404 "GET $path: an id too large for a number is no such run"
  expect_contains "$OUT" "\"error\":\"no run $huge\"" "the answer names the id as given"
done
for path in "/api/runs/$huge/logs" "/api/runs/$huge/events" "/api/runs/$huge/artifacts" \
  "/api/runs/$huge/artifacts/out"; do
  http GET "$path" "" "$auth"
  expect_status 404 "GET $path: no such run"
  expect_contains "$OUT" "no run $huge" "the answer names the id"
done
http GET "/api/triggers/$huge"
expect_status 404 "GET /api/triggers/$huge: no such trigger"
expect_contains "$OUT" "no trigger $huge" "the answer names the id"
for action in approve cancel; do
  http POST "/api/triggers/$huge/$action" "" "$auth"
  expect_status 404 "POST /api/triggers/$huge/$action: no such trigger"
done
for action in cancel rerun; do
  http POST "/api/runs/$huge/$action" "" "$auth"
  expect_status 404 "POST /api/runs/$huge/$action: no such run"
done
http GET "/api/runs/12345"
expect_status 404 "an id that fits but names no run is 404 too"
http GET "/api/runs/12x"
expect_status 404 "an id that is not digits matches no route: 404"
http GET /healthz
expect_status 200 "the server still answers"

# invalid_input from the queue: 409 on every route that meets it.
printf '{"repository": "acme/widgets", "ref": "main"}' >"$ITEST_DIR/trigger.json"
http POST /api/triggers "$ITEST_DIR/trigger.json" "$auth"
expect_status 202 "a trigger of main is accepted"
trigger="$(json_eval - 'd["trigger"]')"
check "the trigger finishes although GIT_DIR names another repository" \
  trigger_done "$trigger" finished
http GET "/api/runs/$(json_eval - 'd["run_ids"][0]')"
expect_json 'd["status"]' success "its run succeeded"
check "nothing was fetched into the decoy" \
  test -z "$(git -C "$decoy" for-each-ref refs/kiln)"
http POST "/api/triggers/$trigger/approve" "" "$auth"
expect_status 409 "approving a trigger that is not waiting is a conflict (409)"
expect_contains "$OUT" "not waiting for approval" "the answer says why"
http POST "/api/triggers/$trigger/cancel" "" "$auth"
expect_status 409 "cancelling a finished trigger is a conflict (409)"
expect_contains "$OUT" "nothing to cancel" "the answer says why"

serve_stop
itest_end
