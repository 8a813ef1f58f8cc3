#!/usr/bin/env bash
# The security suite of kiln serve's routes (issue 26, docs/serve.md "Security model"): every
# route answered with fuzzed ids (0, negative, past 64 bits, letters, encoded NULs and
# traversals) gets 4xx and never 500, with and without a token; path traversal through the
# dashboard and artifact routes reaches no file; forged webhooks (another repository's secret,
# no signature, sha1, a truncated or changed body, a signature of the empty body) get 401 and
# store nothing; a fork's pull request by a stranger waits for approval that only a token
# holder can give, a trusted author's runs at once. The server stays healthy throughout.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin security_routes
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"

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
      - run: mkdir out && echo data > out/file.txt
      - uses: actions/upload-artifact@v4
        with:
          name: out
          path: out
EOF
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"
git -C "$repo" push -q "$bare" "HEAD:refs/pull/7/head"
secret="hook-secret-$RANDOM"
other_secret="other-secret-$RANDOM"
token="api-token-$RANDOM"
cat >"$ITEST_DIR/kiln.yml" <<EOF
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  trusted_authors: [alice]
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
    acme/other:
      clone_url: $bare
      webhook_secret: $other_secret
EOF
"$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
  >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
SERVE_PID=$!
itest_track_pid "$SERVE_PID"
wait_until 60 test -s "$ITEST_DIR/port" || itest_die "kiln serve did not start"
SERVE_BASE="http://127.0.0.1:$(cat "$ITEST_DIR/port")"
SERVE_SECRET="$secret"
auth="Authorization: Bearer $token"

# A run with an artifact, so that the routes below have something to reach for.
cat >"$ITEST_DIR/push.json" <<EOF
{"ref": "refs/heads/main", "before": "$(printf '0%.0s' {1..40})", "after": "$sha",
 "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF
deliver "$ITEST_DIR/push.json" push push-1
expect_status 202 "a signed push is accepted"
first="$(json_eval - 'd["trigger"]')"
check "the push runs" trigger_done "$first" finished
http GET "/api/triggers/$first"
run_id="$(json_eval - 'd["run_ids"][0]')"

# ---- forged webhooks ----------------------------------------------------------------------------
sign_with() { echo "sha256=$(openssl dgst -sha256 -hmac "$1" <"$2" | sed 's/^.*= //')"; }
deliver "$ITEST_DIR/push.json" push forged-1 "$(sign_with "$other_secret" "$ITEST_DIR/push.json")"
expect_status 401 "a body naming acme/widgets signed with acme/other's secret gets 401"
http POST /webhooks/github "$ITEST_DIR/push.json" "X-GitHub-Event: push" "X-GitHub-Delivery: forged-2"
expect_status 401 "no signature gets 401"
deliver "$ITEST_DIR/push.json" push forged-3 \
  "sha1=$(openssl dgst -sha1 -hmac "$secret" <"$ITEST_DIR/push.json" | sed 's/^.*= //')"
expect_status 401 "a sha1 signature gets 401"
head -c 50 "$ITEST_DIR/push.json" >"$ITEST_DIR/cut.json"
deliver "$ITEST_DIR/cut.json" push forged-4 "$(sign "$ITEST_DIR/push.json")"
expect_status 401 "a truncated body under the full body's signature gets 401"
: >"$ITEST_DIR/empty-body"
deliver "$ITEST_DIR/push.json" push forged-5 "$(sign "$ITEST_DIR/empty-body")"
expect_status 401 "the signature of an empty body gets 401"
deliver "$ITEST_DIR/push.json" push forged-6 "sha256=$(printf '%064d' 0)"
expect_status 401 "a zero signature gets 401"
upper="$(sign "$ITEST_DIR/push.json" | tr 'a-f' 'A-F' | sed 's/^SHA256/sha256/')"
sed 's/main/other/' "$ITEST_DIR/push.json" >"$ITEST_DIR/changed.json"
deliver "$ITEST_DIR/changed.json" push forged-7 "$upper"
expect_status 401 "a changed body under the old signature (uppercase hex) gets 401"
check "the forgeries stored nothing (1 trigger)" test "$(trigger_count)" = 1

# ---- fork approval ---------------------------------------------------------------------------------
pull_body() {  # FILE AUTHOR HEAD-REPO
  cat >"$1" <<EOF
{"action": "opened", "number": 7, "repository": {"full_name": "acme/widgets"},
 "sender": {"login": "$2"},
 "pull_request": {"number": 7, "user": {"login": "$2"}, "updated_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
   "head": {"sha": "$sha", "ref": "topic", "repo": {"full_name": "$3"}},
   "base": {"ref": "main", "sha": "$sha", "repo": {"full_name": "acme/widgets"}}}}
EOF
}
pull_body "$ITEST_DIR/stranger.json" mallory mallory/widgets
deliver "$ITEST_DIR/stranger.json" pull_request pr-1
expect_json 'd["status"]' waiting_approval "a stranger's fork pull request waits for approval"
waiting="$(json_eval - 'd["trigger"]')"
http POST "/api/triggers/$waiting/approve" "$ITEST_DIR/push.json"
expect_status 401 "approval without a token gets 401"
http POST "/api/triggers/$waiting/approve" "$ITEST_DIR/push.json" "Authorization: Bearer $token-x"
expect_status 401 "approval with a token one character longer gets 401"
http POST "/api/triggers/$waiting/approve" "$ITEST_DIR/push.json" "Authorization: bearer $token"
expect_status 401 "approval with a lowercase scheme gets 401"
http GET "/api/triggers/$waiting"
expect_json 'd["status"]' waiting_approval "the refused approvals changed nothing"
sleep 1  # another updated_at, so the trusted author's pull request is another payload
pull_body "$ITEST_DIR/trusted.json" alice alice/widgets
deliver "$ITEST_DIR/trusted.json" pull_request pr-2
expect_json 'd["status"]' queued "a trusted author's fork pull request runs at once"
trusted="$(json_eval - 'd["trigger"]')"
check "the trusted author's pull request runs" trigger_done "$trusted" finished
http POST "/api/triggers/$trusted/approve" "$ITEST_DIR/push.json" "$auth"
expect_status 409 "approving a trigger that does not wait gets 409"
http POST "/api/triggers/$waiting/cancel" "$ITEST_DIR/push.json" "$auth"
expect_status 202 "a token holder can cancel the waiting pull request"
http GET "/api/triggers/$waiting"
expect_json 'd["status"]' cancelled "the stranger's pull request never ran"
expect_json 'len(d["run_ids"] or [])' 0 "and made no run"

# ---- ids and paths on every route ----------------------------------------------------------------
ids=(0 -1 abc 99999999999999999999 18446744073709551616 "1%00" "1%2F..%2F1" "%2e" "1.0" "0x1")
bad=""
for id in "${ids[@]}"; do
  for path in "/api/runs/$id" "/api/runs/$id/logs" "/api/runs/$id/events" "/api/runs/$id/report" \
    "/api/runs/$id/telemetry" "/api/runs/$id/artifacts" "/api/runs/$id/artifacts/out" \
    "/api/triggers/$id"; do
    for header in "X-None: none" "$auth"; do
      http GET "$path" "" "$header"
      [[ "$HTTP_STATUS" =~ ^4[0-9][0-9]$ ]] || bad+=" GET $path=$HTTP_STATUS"
    done
  done
  for path in "/api/runs/$id/cancel" "/api/runs/$id/rerun" "/api/triggers/$id/approve" \
    "/api/triggers/$id/cancel"; do
    for header in "X-None: none" "$auth"; do
      http POST "$path" "$ITEST_DIR/empty-body" "$header"
      [[ "$HTTP_STATUS" =~ ^4[0-9][0-9]$ ]] || bad+=" POST $path=$HTTP_STATUS"
    done
  done
done
check "every fuzzed id on every route gets 4xx (${#ids[@]} ids x 12 routes x 2)${bad:+:$bad}" \
  test -z "$bad"
http GET "/api/runs/$run_id/artifacts/out" "" "$auth"
expect_status 200 "the artifact itself is served (the routes above had something to find)"
traversal=""
for path in "/ui/../../../../etc/passwd" "/ui/%2e%2e/%2e%2e/%2e%2e/etc/passwd" \
  "/ui/..%2f..%2f..%2fetc%2fpasswd" "/ui/assets/..%2f..%2fkiln.yml" "/%2e%2e/kiln.yml" \
  "/api/runs/$run_id/artifacts/..%2f..%2f..%2fkiln.yml" "/api/runs/$run_id/artifacts/.." \
  "/api/runs/$run_id/artifacts/%2e%2e" "/api/runs/$run_id/artifacts/out%2f..%2f..%2f.."; do
  curl -sS --path-as-is --max-time 30 -o "$ITEST_DIR/traversal.out" -H "$auth" \
    "$SERVE_BASE$path" || true
  if grep -qE "root:|webhook_secret|api_tokens" "$ITEST_DIR/traversal.out"; then traversal+=" $path"; fi
done
check "no traversal reaches /etc/passwd or kiln.yml${traversal:+:$traversal}" test -z "$traversal"
http GET /healthz
expect_status 200 "the server is healthy after the fuzzing"
serve_stop
expect_not_contains "$(cat "$ITEST_DIR/serve.err")" "[error]" "the server logged no error"
itest_end
