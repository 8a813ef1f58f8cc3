# Helpers for the tests of `kiln serve` (source after lib.sh and itest_begin): start a server
# on a loopback port for a configured repository, call its API, deliver signed webhooks.
# OUT and HTTP_STATUS are set here for the scripts that source this file.
# shellcheck disable=SC2034

# serve_start REPO-NAME CLONE-URL SECRET TOKEN [MAX-RUNS]: writes $ITEST_DIR/kiln.yml, starts
# kiln serve (tracked) and sets $SERVE_PID, $SERVE_BASE (http://127.0.0.1:PORT) and the
# variables deliver() uses.
serve_start() {
  SERVE_SECRET="$3"
  SERVE_TOKEN="$4"
  cat >"$ITEST_DIR/kiln.yml" <<EOF
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$SERVE_TOKEN]
  max_concurrent_runs: ${5:-2}
  shutdown_grace: 10m
  repositories:
    $1:
      clone_url: $2
      webhook_secret: $SERVE_SECRET
EOF
  serve_launch
}

# serve_launch: starts kiln serve (tracked) on the $ITEST_DIR/kiln.yml already written and sets
# $SERVE_PID and $SERVE_BASE.
serve_launch() {
  rm -f "$ITEST_DIR/port"
  "$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
    >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
  SERVE_PID=$!
  itest_track_pid "$SERVE_PID"
  wait_until 60 test -s "$ITEST_DIR/port" || {
    cat "$ITEST_DIR/serve.err" >&2
    itest_die "kiln serve did not start listening"
  }
  SERVE_BASE="http://127.0.0.1:$(cat "$ITEST_DIR/port")"
}

# serve_stop: SIGTERM, and a check that the server exits 0.
serve_stop() {
  kill -TERM "$SERVE_PID"
  if wait_exit "$SERVE_PID" 120 && [[ "$WAIT_RC" == 0 ]]; then
    pass "SIGTERM stops the server with exit code 0"
  else
    fail "the server did not stop cleanly after SIGTERM (exit ${WAIT_RC:-none})"
    tail -20 "$ITEST_DIR/serve.err" >&2
  fi
}

# http METHOD PATH [BODY-FILE] [HEADER...]: the status in $HTTP_STATUS, the body in $OUT and
# $ITEST_DIR/last.out.
http() {
  local method="$1" path="$2" body="${3:-}"
  shift 3 || shift $#
  local args=(-sS --max-time 60 -o "$ITEST_DIR/last.out" -w '%{http_code}' -X "$method")
  local h
  for h in "$@"; do args+=(-H "$h"); done
  if [[ -n "$body" ]]; then args+=(--data-binary "@$body" -H 'Content-Type: application/json'); fi
  HTTP_STATUS="$(curl "${args[@]}" "$SERVE_BASE$path")" || HTTP_STATUS="curl-failed"
  OUT="$(head -c 100000 "$ITEST_DIR/last.out" | tr -d '\0')"
}
expect_status() {
  if [[ "$HTTP_STATUS" == "$1" ]]; then pass "$2"; else fail "$2: HTTP $HTTP_STATUS, want $1: ${OUT:0:300}"; fi
}
# sign FILE: the X-Hub-Signature-256 value of the file under the repository's secret.
sign() { echo "sha256=$(openssl dgst -sha256 -hmac "$SERVE_SECRET" <"$1" | sed 's/^.*= //')"; }
# deliver BODY-FILE EVENT DELIVERY [SIGNATURE]: a webhook, signed with the secret by default.
deliver() {
  local signature="${4:-$(sign "$1")}"
  http POST /webhooks/github "$1" "X-GitHub-Event: $2" "X-GitHub-Delivery: $3" \
    "X-Hub-Signature-256: $signature"
}
# trigger_done ID STATUS: waits until the trigger settled, then checks it is STATUS.
trigger_settled() {
  http GET "/api/triggers/$1"
  [[ "$(json_eval - 'd["status"]')" =~ ^(finished|failed|cancelled)$ ]]
}
trigger_done() {
  wait_until 300 trigger_settled "$1" || return 1
  http GET "/api/triggers/$1"
  if [[ "$(json_eval - 'd["status"]')" != "$2" ]]; then
    echo "    trigger $1: $OUT" >&2
    return 1
  fi
}
# trigger_count: prints how many triggers the server has stored.
trigger_count() {
  curl -sS "$SERVE_BASE/api/triggers?limit=0" |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin)["triggers"]))'
}
