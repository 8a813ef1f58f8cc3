#!/usr/bin/env bash
# A private dashboard (serve.dashboard: private, docs/serve.md#dashboard): every GET of /api/
# and /metrics needs the API token (401 without, 200 with), the page itself and /healthz stay
# open; `private` without serve.api_tokens, or another value, is refused at FILE:LINE:COL (exit
# 2). Then headless Chromium (tests/e2e/dashboard_private.mjs): without a token the page says
# it is private and shows no run; with it the run is listed and opens.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin dashboard_private
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
e2e_require
rm -f "$E2E_ARTIFACTS/dashboard-private.png"

# Refused configurations, each located.
cat >"$ITEST_DIR/kiln.yml" <<'EOF_YML'
serve:
  listen: 127.0.0.1:0
  dashboard: private
EOF_YML
kiln serve --config "$ITEST_DIR/kiln.yml"
expect_rc 2 "serve.dashboard: private without serve.api_tokens is refused"
expect_contains "$ERR" "kiln.yml:3:14: error: serve.dashboard: private needs serve.api_tokens" \
  "the refusal names the file, line and column"
printf 'serve:\n  api_tokens: [t]\n  dashboard: hidden\n' >"$ITEST_DIR/kiln.yml"
kiln serve --config "$ITEST_DIR/kiln.yml"
expect_rc 2 "serve.dashboard: hidden is refused"
expect_contains "$ERR" "kiln.yml:3:14: error: serve.dashboard: expected public or private, got 'hidden'" \
  "the refusal says what is expected"

token="api-token-$RANDOM"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF_YML'
name: Private
on: push
jobs:
  hello:
    runs-on: [self-hosted, linux]
    steps:
      - run: echo "PRIVATE-RUN"
EOF_YML
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
cat >"$ITEST_DIR/kiln.yml" <<EOF_YML
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  dashboard: private
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: secret
EOF_YML
mkdir -p "$ITEST_DIR/state"
serve_launch
echo '{"repository": "acme/widgets", "ref": "main"}' >"$ITEST_DIR/trigger.json"
http POST /api/triggers "$ITEST_DIR/trigger.json" "Authorization: Bearer $token"
expect_status 202 "a push is triggered with the token"
trigger="$(json_eval - 'd["trigger"]')"
http GET "/api/triggers/$trigger"
expect_status 401 "without the token a trigger is not shown"
settled() {
  [[ "$(curl -sS -H "Authorization: Bearer $token" "$SERVE_BASE/api/triggers/$trigger" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])')" == finished ]]
}
check "the trigger's run finishes" wait_until 120 settled
for path in /api/runs /api/runs/1 /api/runs/1/report /api/triggers /api/gpus \
  /api/tests/quarantine /api/runs/1/telemetry /api/benchmarks /metrics; do
  http GET "$path"
  expect_status 401 "GET $path without a token is 401"
  http GET "$path" "" "Authorization: Bearer wrong"
  expect_status 401 "GET $path with a wrong token is 401"
done
http GET /api/runs "" "Authorization: Bearer $token"
expect_status 200 "GET /api/runs with the token is 200"
expect_json '[r["name"] for r in d["runs"]]' '["Private"]' "and lists the run"
http GET /metrics "" "Authorization: Bearer $token"
expect_status 200 "GET /metrics with the token is 200"
http GET /healthz
expect_status 200 "GET /healthz needs no token"
http GET /
expect_status 200 "the page itself needs no token (it holds no data)"
expect_contains "$OUT" '<div id="app">' "and is the dashboard"

export E2E_BASE="$SERVE_BASE" E2E_TOKEN="$token"
e2e_browser dashboard_private.mjs
check "screenshot $E2E_ARTIFACTS/dashboard-private.png" test -s "$E2E_ARTIFACTS/dashboard-private.png"
serve_stop
itest_end
