#!/usr/bin/env bash
# kiln serve end to end: a signed push webhook becomes a run of the repository's workflow that
# completes and shows in the API (runs, jobs, logs, server-sent events); a bad signature gets
# 401 and starts nothing; a redelivery is not run twice; a fork's pull request by a stranger
# waits until `kiln approve`; commit statuses reach a recording forge; SIGTERM stops the
# server cleanly (exit 0).
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve

secret="webhook-secret-$RANDOM"
token="api-token-$RANDOM"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF'
name: CI
on: [push, pull_request]
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo "HELLO-FROM-SERVE event=${{ github.event_name }} sha=${{ github.sha }}"
EOF
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"

# The forge: records every status POST as a JSON line.
cat >"$ITEST_DIR/forge.py" <<'EOF'
import http.server, json, sys
log, port_file = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization"),
                                "body": json.loads(body)}) + "\n")
        self.send_response(201); self.end_headers()
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f: f.write(str(server.server_port))
import os; os.rename(port_file + ".tmp", port_file)
server.serve_forever()
EOF
python3 "$ITEST_DIR/forge.py" "$ITEST_DIR/statuses.jsonl" "$ITEST_DIR/forge.port" &
forge_pid=$!
itest_track_pid "$forge_pid"
wait_until 30 test -s "$ITEST_DIR/forge.port" || itest_die "the recording forge did not start"
forge_port="$(cat "$ITEST_DIR/forge.port")"

cat >"$ITEST_DIR/kiln.yml" <<EOF
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
      statuses:
        api_url: http://127.0.0.1:$forge_port/api/v1
        token: forge-token
EOF
"$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
  --log-file "$ITEST_DIR/serve.log" >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
serve_pid=$!
itest_track_pid "$serve_pid"
wait_until 60 test -s "$ITEST_DIR/port" || {
  cat "$ITEST_DIR/serve.err" >&2
  itest_die "kiln serve did not start listening"
}
base="http://127.0.0.1:$(cat "$ITEST_DIR/port")"

# A second server on the same port (its own store) is refused: no SO_REUSEPORT sharing.
port="$(cat "$ITEST_DIR/port")"
sed "s/127.0.0.1:0/127.0.0.1:$port/; s|state/kiln.db|state2/kiln.db|" "$ITEST_DIR/kiln.yml" \
  >"$ITEST_DIR/kiln2.yml"
RC=0
timeout 20 "$KILN" serve --config "$ITEST_DIR/kiln2.yml" >"$ITEST_DIR/serve2.out" \
  2>"$ITEST_DIR/serve2.err" || RC=$?
if [[ "$RC" == 2 ]]; then pass "a second kiln serve on port $port exits 2"; else
  fail "a second kiln serve on port $port: exit $RC (want 2)"; cat "$ITEST_DIR/serve2.err" >&2; fi
expect_contains "$(cat "$ITEST_DIR/serve2.err")" "port $port is in use by another process" \
  "the second server says which port another process holds"

# The API and webhook helpers (http, expect_status, deliver, trigger_done) of serve_lib.sh.
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
SERVE_BASE="$base"
SERVE_SECRET="$secret"
auth="Authorization: Bearer $token"

http GET /healthz
expect_status 200 "GET /healthz answers"
expect_json 'd["status"]' ok "the server is healthy"

cat >"$ITEST_DIR/push.json" <<EOF
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF

# A wrong signature, a missing one, and a signature of another body: 401, nothing stored.
deliver "$ITEST_DIR/push.json" push bad-1 "sha256=$(printf '%064d' 0)"
expect_status 401 "a wrong signature gets 401"
http POST /webhooks/github "$ITEST_DIR/push.json" "X-GitHub-Event: push" "X-GitHub-Delivery: bad-2"
expect_status 401 "a missing signature gets 401"
http GET /api/triggers
expect_json 'len(d["triggers"])' 0 "refused deliveries start nothing"

deliver "$ITEST_DIR/push.json" push delivery-1
expect_status 202 "a signed push is accepted"
expect_json 'd["status"]' queued "the push is queued"
trigger_id="$(json_eval - 'd["trigger"]')"
deliver "$ITEST_DIR/push.json" push delivery-1
expect_status 200 "a redelivery is answered"
expect_json 'd["duplicate"]' delivery-1 "a redelivery is recognised as a duplicate"

check "the push's trigger finishes" trigger_done "$trigger_id" finished
http GET /api/triggers
expect_json 'len(d["triggers"])' 1 "the duplicate delivery was not run twice"
http GET "/api/triggers/$trigger_id"
run_id="$(json_eval - 'd["run_ids"][0]')"
expect_json 'len(d["run_ids"])' 1 "the trigger made one run"

http GET /api/runs
expect_status 200 "GET /api/runs answers"
expect_json 'len(d["runs"])' 1 "one run is listed"
expect_json 'd["runs"][0]["sha"]' "$sha" "the run is of the pushed commit"
http GET "/api/runs/$run_id"
expect_json 'd["status"]' success "the run succeeded"
expect_json 'd["repository"]' acme/widgets "the run names the repository"
expect_json '[j["key"] for j in d["jobs"]]' '["build"]' "the run has its job"
expect_json 'd["jobs"][0]["conclusion"]' success "the job succeeded"
expect_json 'len(d["jobs"][0]["steps"]) > 0' true "the job lists its steps"

http GET "/api/runs/$run_id/logs"
expect_status 401 "logs need the token"
http GET "/api/runs/$run_id/logs" "" "Authorization: Bearer wrong"
expect_status 401 "logs refuse a wrong token"
http GET "/api/runs/$run_id/logs" "" "$auth"
expect_status 200 "logs with the token"
expect_contains "$OUT" "HELLO-FROM-SERVE event=push sha=$sha" "the log has the step's output"
last_seq="$(json_eval - 'd["next"]')"
http GET "/api/runs/$run_id/logs?after=$last_seq" "" "$auth"
expect_json 'len(d["lines"])' 0 "logs after the last seq are empty"

curl -sS -N -H "$auth" "$base/api/runs/$run_id/events" >"$ITEST_DIR/events.txt" || true
events="$(cat "$ITEST_DIR/events.txt")"
expect_contains "$events" "event: log" "server-sent events carry log lines"
expect_contains "$events" "HELLO-FROM-SERVE" "server-sent events carry the step's output"
expect_contains "$events" '"status":"success"' "server-sent events carry the status"
expect_contains "$events" "event: end" "server-sent events end with the run"

statuses="$(cat "$ITEST_DIR/statuses.jsonl" 2>/dev/null || true)"
expect_contains "$statuses" "\"path\": \"/api/v1/repos/acme/widgets/statuses/$sha\"" \
  "commit statuses go to the forge's statuses path"
expect_contains "$statuses" '"state": "pending"' "a pending status is posted when the job starts"
expect_contains "$statuses" '"state": "success"' "a success status is posted when it ends"
expect_contains "$statuses" '"context": "kiln / build"' "the status names the job"
expect_contains "$statuses" '"auth": "token forge-token"' "the status carries the forge token"

# A pull request from a fork by a stranger waits for approval, then runs.
echo "change" >>"$repo/README.md"
commit_all "$repo" "a pull request's change"
pr_sha="$(git -C "$repo" rev-parse HEAD)"
git -C "$repo" push -q "$bare" "HEAD:refs/pull/7/head"
cat >"$ITEST_DIR/pull.json" <<EOF
{"action": "opened", "number": 7, "repository": {"full_name": "acme/widgets"},
 "sender": {"login": "mallory"},
 "pull_request": {"number": 7, "user": {"login": "mallory"},
   "head": {"sha": "$pr_sha", "ref": "topic", "repo": {"full_name": "mallory/widgets"}},
   "base": {"ref": "main", "sha": "$sha", "repo": {"full_name": "acme/widgets"}}}}
EOF
deliver "$ITEST_DIR/pull.json" pull_request delivery-2
expect_status 202 "a fork's pull request is accepted"
expect_json 'd["status"]' waiting_approval "a stranger's fork pull request waits for approval"
pr_trigger="$(json_eval - 'd["trigger"]')"
http GET "/api/triggers/$pr_trigger"
expect_json 'd["status"]' waiting_approval "it is still waiting (nothing ran it)"
echo '{}' >"$ITEST_DIR/empty.json"
http POST "/api/triggers/$pr_trigger/approve" "$ITEST_DIR/empty.json"
expect_status 401 "approval without a token is refused"
kiln approve "$pr_trigger" --server "$base" --token wrong
expect_rc 2 "kiln approve with a wrong token fails"
kiln approve "$pr_trigger" --server "$base" --token "$token"
expect_rc 0 "kiln approve lets it run"
check "the approved pull request's trigger finishes" \
  trigger_done "$pr_trigger" finished
http GET "/api/triggers/$pr_trigger"
pr_run="$(json_eval - 'd["run_ids"][0]')"
http GET "/api/runs/$pr_run"
expect_json 'd["event"]' pull_request "the approved run is a pull_request run"
expect_json 'd["status"]' success "the approved run succeeded"
kiln approve "$pr_trigger" --server "$base" --token "$token"
expect_rc 2 "approving a trigger twice is an error"

# kiln trigger: a push of the branch's current commit.
kiln trigger acme/widgets main --server "$base" --token "$token"
expect_rc 0 "kiln trigger queues a push"
manual="$(json_eval - 'd["trigger"]')"
check "the triggered push finishes" trigger_done "$manual" finished
# Runs are stored under the configured name from their start, so they count on per repository
# and workflow across triggers (each trigger has its own checkout directory).
trigger_err="$ERR"
http GET "/api/triggers/$manual"
manual_run="$(json_eval - 'd["run_ids"][0]')"
expect_contains "$trigger_err" "run $manual_run: $base/ui/runs/$manual_run" \
  "kiln trigger prints the link of the run it started (on stderr)"
expect_contains "$trigger_err" "trigger $manual (" "kiln trigger prints the trigger's link"
link="$(sed -n 's/^run [0-9]*: //p' <<<"$trigger_err" | head -1)"
check "the printed run link is a page the server serves" curl -fsS -o /dev/null "$link"
kiln trigger acme/widgets main --server "$base/" --token "$token" --wait 0
expect_rc 0 "kiln trigger --wait 0 queues a push"
expect_json 'd["trigger"] > 0' true "stdout stays the server's JSON answer"
expect_contains "$ERR" "trigger $(json_eval - 'd["trigger"]') (queued): $base/api/triggers/" \
  "--wait 0 prints the trigger's link at once, without a doubled slash"
check "the second triggered push finishes" trigger_done "$(json_eval - 'd["trigger"]')" finished
http GET "/api/runs/$manual_run"
expect_json 'd["repository"]' acme/widgets "the triggered run names the repository"
http GET "/api/runs/$run_id"
first_number="$(json_eval - 'd["number"]')"
http GET "/api/runs/$manual_run"
expect_json "d[\"number\"] > $first_number" true "the next run of the workflow has the next run number"

kill -TERM "$serve_pid"
if wait_exit "$serve_pid" 120; then
  if [[ "$WAIT_RC" == 0 ]]; then pass "SIGTERM stops the server with exit code 0"
  else fail "SIGTERM: exit code $WAIT_RC"; cat "$ITEST_DIR/serve.err" >&2; fi
else
  fail "the server did not stop after SIGTERM"
fi
expect_contains "$(cat "$ITEST_DIR/serve.log")" "kiln serve: stopped" \
  "the server says it stopped, in its --log-file"
expect_contains "$(cat "$ITEST_DIR/serve.log")" "kiln serve: listening on http://127.0.0.1:" \
  "--log-file holds the server's log"
if grep -q "listening on" "$ITEST_DIR/serve.out" "$ITEST_DIR/serve.err"; then
  fail "with --log-file the log still goes to stdout/stderr"
else pass "with --log-file nothing of the log goes to stdout or stderr"; fi
kill "$forge_pid" 2>/dev/null || true

itest_end
