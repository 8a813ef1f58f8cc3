#!/usr/bin/env bash
# kiln serve bounds every request while reading it (issue 26, docs/serve.md "Security model"):
# a 200 MiB chunked body without a signature is refused with 413 at the limit and never held in
# memory (the server's peak RSS stays far below the body); a body on an unknown path, an
# unauthenticated API call and an unknown method are answered without reading the body; a
# client sending its headers a byte a second gets 408, a flood of headers 431, a client with too
# many connections 429; a signed body replayed under a new delivery id runs nothing, nor one
# dated outside the replay window; a signed 2 MiB body (kept on disk past 256 KiB while its
# signature is checked) runs.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin security_http
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
client() { python3 "$KILN_SOURCE_DIR/tests/integration/security_http_client.py" "$port" "$@"; }

repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF'
name: CI
on: push
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo "RAN ${{ github.event.head_commit.message }}"
EOF
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"
token="api-token-$RANDOM"
serve_start acme/widgets "$bare" "hook-secret-$RANDOM" "$token"
port="${SERVE_BASE##*:}"
auth="Authorization: Bearer $token"
pid_status() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$SERVE_PID/status"; }

# ---- bodies -----------------------------------------------------------------------------------
rss_before="$(pid_status VmHWM)"
result="$(client chunked /webhooks/github 200 "X-GitHub-Event: push" "X-GitHub-Delivery: big-1")"
echo "  (200 MiB chunked, unsigned: $result; peak RSS before ${rss_before} kB, after $(pid_status VmHWM) kB)"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["status"]' 413 "a 200 MiB chunked webhook body gets 413"
expect_json 'd["closed"]' true "the server closes the connection after it"
expect_json 'd["sent_mib"] < 100' true "the server stopped reading long before the end of the body"
peak_mb=$(($(pid_status VmHWM) / 1024))
check "the server's peak RSS stayed under 100 MB (${peak_mb} MB)" test "$peak_mb" -lt 100

result="$(client chunked /no/such/path 50)"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["status"]' 404 "a chunked body to an unknown path gets 404"
expect_json 'd["sent_mib"] < 50' true "the body to an unknown path is not read"
result="$(client chunked /api/triggers 50)"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["status"]' 401 "a chunked body to the API without a token gets 401"
expect_json 'd["sent_mib"] < 50' true "the unauthenticated API body is not read"
result="$(client chunked /api/triggers 2 "$auth")"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["status"]' 413 "a 2 MiB API body with the token gets 413 (64 KiB limit)"
for method in PUT PATCH DELETE; do
  http "$method" /api/runs/1 "$ITEST_DIR/kiln.yml"
  expect_status 404 "$method with a body is not an endpoint: 404"
done
result="$(client raw 'PRI /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n')"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["status"]' 405 "an unknown method with a 1 GB body gets 405 at once"
result="$(client raw 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\nxxxx')"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["status"]' 200 "a GET with a body is answered"
expect_json 'd["closed"]' true "and its connection closed, its body unread"
# curl sends Expect: 100-continue for a large body: refused before a byte of it is sent.
head -c $((30 * 1024 * 1024)) /dev/zero >"$ITEST_DIR/zeros"
status="$(curl -sS -o /dev/null -w '%{http_code}' --max-time 60 -H 'Expect: 100-continue' \
  -H 'X-GitHub-Event: push' -H 'X-GitHub-Delivery: big-2' --data-binary "@$ITEST_DIR/zeros" \
  "$SERVE_BASE/webhooks/github" || true)"
check "a 30 MB body announced with Expect: 100-continue gets 413 ($status)" test "$status" = 413

# ---- slow and greedy clients ------------------------------------------------------------------
result="$(client slow 40)"
echo "  (headers a byte a second: $result)"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["status"]' 408 "headers sent a byte a second get 408"
expect_json 'd["closed"]' true "the slow client's connection is closed"
expect_json 'd["sent_bytes"] < 30' true "the server did not wait for the slow headers to end"
result="$(client headers 200)"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["status"]' 431 "200 KiB of headers get 431"
result="$(client connections 70)"
echo "  (70 idle connections: $result)"
echo "$result" >"$ITEST_DIR/last.out"
expect_json 'd["refused_429"]' 6 "connections past 64 from one address get 429"
expect_json 'd["closed_idle"]' 64 "the 64 idle ones are closed when their keep-alive wait ends"
wait_until 20 curl -sSf -o /dev/null "$SERVE_BASE/healthz"
http GET /healthz
expect_status 200 "the server answers again once the idle connections are gone"

# ---- replays ----------------------------------------------------------------------------------
now="$(date +%s)"
push_body() {  # FILE PUSHED_AT MESSAGE [PAD-BYTES]
  python3 - "$@" "$sha" <<'PY'
import json, sys
path, pushed_at, message = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pad = int(sys.argv[4]) if len(sys.argv) > 5 else 0
json.dump({"ref": "refs/heads/main", "before": "0" * 40, "after": sys.argv[-1],
           "repository": {"full_name": "acme/widgets", "pushed_at": pushed_at},
           "head_commit": {"message": message}, "sender": {"login": "alice"}, "pad": "p" * pad},
          open(path, "w"))
PY
}
push_body "$ITEST_DIR/push.json" "$now" first-push
deliver "$ITEST_DIR/push.json" push d-1
expect_status 202 "a signed push is accepted"
first="$(json_eval - 'd["trigger"]')"
deliver "$ITEST_DIR/push.json" push d-2
expect_status 200 "the same signed body under a new delivery id is a replay"
expect_json 'd["duplicate"]' d-2 "the replay is answered as a duplicate"
sed 's/first-push/other-push/' "$ITEST_DIR/push.json" >"$ITEST_DIR/forged.json"
deliver "$ITEST_DIR/forged.json" push d-3 "$(sign "$ITEST_DIR/push.json")"
expect_status 401 "a changed body under the replayed signature gets 401"
push_body "$ITEST_DIR/old.json" $((now - 2 * 86400)) old-push
deliver "$ITEST_DIR/old.json" push d-4
expect_status 409 "a push from two days ago (outside the 24 h window) gets 409"
expect_contains "$OUT" "replay window" "the refusal says why"
push_body "$ITEST_DIR/future.json" $((now + 3600)) future-push
deliver "$ITEST_DIR/future.json" push d-5
expect_status 409 "a push dated an hour ahead gets 409"
push_body "$ITEST_DIR/large.json" "$now" large-push $((2 * 1024 * 1024))
deliver "$ITEST_DIR/large.json" push d-6
expect_status 202 "a signed 2 MiB push is accepted"
large="$(json_eval - 'd["trigger"]')"
check "the first push runs" trigger_done "$first" finished
check "the 2 MiB push runs" trigger_done "$large" finished
check "the replays, forgeries and stale pushes stored nothing (2 triggers)" \
  test "$(trigger_count)" = 2

# ---- ids --------------------------------------------------------------------------------------
http GET /api/runs/99999999999999999999999999
expect_status 404 "an id past 64 bits is a 404"
expect_not_contains "$(curl -sSi "$SERVE_BASE/api/runs/99999999999999999999")" "EXCEPTION_WHAT" \
  "no exception text reaches the client"

serve_stop
expect_not_contains "$(cat "$ITEST_DIR/serve.err")" "[error]" "the server logged no error"
itest_end
