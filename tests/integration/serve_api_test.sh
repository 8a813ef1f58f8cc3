#!/usr/bin/env bash
# kiln serve's API beyond the first slice, through the real binary: artifacts listed and
# downloaded as zip files; `kiln rerun --failed` re-runs only the failed job and what needs it
# (the build job is reused with its outputs and artifact; the attempt and run number are
# GitHub's), the flaky JUnit test of the re-run of the same commit is marked; a full `kiln rerun`;
# GET /metrics (kiln metrics' exposition plus the queue and webhook counters, accepted by
# promtool); bad input: oversized, malformed and unsigned deliveries get 4xx and store nothing.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
itest_begin serve_api

repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF'
name: CI
on: push
jobs:
  build:
    runs-on: linux
    outputs:
      version: ${{ steps.v.outputs.version }}
    steps:
      - id: v
        run: |
          echo "version=1.$RANDOM.$RANDOM" >> "$GITHUB_OUTPUT"
          mkdir -p out/sub
          echo "built in attempt $GITHUB_RUN_ATTEMPT" > out/sub/result.txt
          echo top > out/top.txt
          echo "BUILD-RAN attempt=$GITHUB_RUN_ATTEMPT"
      - uses: actions/upload-artifact@v4
        with:
          name: build-output
          path: out
  test:
    needs: build
    runs-on: linux
    steps:
      - uses: actions/download-artifact@v4
        with:
          name: build-output
          path: got
      - run: |
          echo "TEST attempt=$GITHUB_RUN_ATTEMPT/${{ github.run_attempt }} version=${{ needs.build.outputs.version }} artifact=$(cat got/sub/result.txt)"
          if [ "$GITHUB_RUN_ATTEMPT" -ge 2 ]; then failure=""; else failure='<failure message="first attempt">boom</failure>'; fi
          echo "<testsuite name=\"t\"><testcase classname=\"unit\" name=\"test_io\">$failure</testcase></testsuite>" > junit.xml
      - run: test "$GITHUB_RUN_ATTEMPT" -ge 2
  lint:
    runs-on: linux
    steps:
      - run: |
          echo "LINT-RAN attempt=$GITHUB_RUN_ATTEMPT"
          printf 'NOT-UTF8 \377\376 end\n'
  report:
    needs: test
    if: always()
    runs-on: linux
    steps:
      - run: echo "REPORT-RAN attempt=$GITHUB_RUN_ATTEMPT"
EOF
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"

serve_start acme/widgets "$bare" "secret-$RANDOM" "token-$RANDOM"
auth="Authorization: Bearer $SERVE_TOKEN"
echo '{}' >"$ITEST_DIR/empty.json"
cat >"$ITEST_DIR/push.json" <<EOF
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF

# ---- bad input: 4xx, and nothing is stored ----------------------------------------------------
# (serve_test.sh covers a wrong and a missing signature.)
python3 -c "print('{\"pad\": \"' + 'x' * (26 * 1024 * 1024) + '\"}')" >"$ITEST_DIR/huge.json"
deliver "$ITEST_DIR/huge.json" push huge-1
expect_status 413 "a body over 25 MB gets 413"
printf '{"ref": "refs/heads/main", "repository": {"full_name": "acme/wid' >"$ITEST_DIR/cut.json"
deliver "$ITEST_DIR/cut.json" push cut-1
expect_status 401 "a body that is not JSON names no repository, so no secret verifies it: 401"
printf '{"repository": {"full_name": "acme/widgets"}, "ref": 5}' >"$ITEST_DIR/noref.json"
deliver "$ITEST_DIR/noref.json" push noref-1
expect_status 400 "a signed push without ref or commit gets 400"
cat >"$ITEST_DIR/other.json" <<EOF
{"ref": "refs/heads/main", "after": "$sha", "repository": {"full_name": "mallory/other"}}
EOF
deliver "$ITEST_DIR/other.json" push other-1
expect_status 401 "a repository that is not configured gets 401"
http POST /webhooks/github "$ITEST_DIR/push.json" "X-GitHub-Delivery: nohdr-1" \
  "X-Hub-Signature-256: $(sign "$ITEST_DIR/push.json")"
expect_status 400 "a delivery without X-GitHub-Event gets 400"
deliver "$ITEST_DIR/push.json" push sha1-1 "sha1=$(openssl dgst -sha1 -hmac "$SERVE_SECRET" <"$ITEST_DIR/push.json" | sed 's/^.*= //')"
expect_status 401 "a sha1 signature (X-Hub-Signature's scheme) gets 401"
sed 's/alice/mallory/' "$ITEST_DIR/push.json" >"$ITEST_DIR/tampered.json"
deliver "$ITEST_DIR/tampered.json" push tampered-1 "$(sign "$ITEST_DIR/push.json")"
expect_status 401 "a body changed after signing gets 401"
check "no bad delivery stored a trigger" test "$(trigger_count)" -eq 0

# ---- a push: build succeeds (artifact, output), test fails on the first attempt ---------------
deliver "$ITEST_DIR/push.json" push delivery-1
expect_status 202 "a signed push is accepted"
first_trigger="$(json_eval - 'd["trigger"]')"
check "the push's trigger finishes" trigger_done "$first_trigger" finished
http GET "/api/triggers/$first_trigger"
run1="$(json_eval - 'd["run_ids"][0]')"
http GET "/api/runs/$run1"
expect_json 'd["status"]' failure "the first attempt fails (the test job)"
expect_json 'd["attempt"]' 1 "it is attempt 1"
expect_json 'd["rerun_of"]' None "a first attempt repeats nothing"
run1_number="$(json_eval - 'd["number"]')"
http GET "/api/runs/$run1/logs?limit=0" "" "$auth"
version1="$(json_eval - '[l["text"] for l in d["lines"] if "TEST attempt=" in l["text"]][0].split("version=")[1].split()[0]')"
check "the test job saw the build's version output ($version1)" test -n "$version1"

# ---- a job's bytes and the API's inputs: answers, never an escaped exception -----------------
http GET "/api/runs/$run1/logs?limit=0" "" "$auth"
expect_status 200 "the logs of a job that printed invalid UTF-8 are served"
expect_contains "$OUT" "NOT-UTF8" "with the line that held it (its bad bytes replaced)"
http GET "/api/runs/$run1/events" "" "$auth"
expect_status 200 "the event stream of that run is served to its end"
expect_contains "$OUT" "NOT-UTF8" "with the line too"
http GET /healthz
expect_status 200 "the server still answers after serving them"
http GET "/api/runs/99999999999999999999"
expect_status 404 "a run id too large for a number is no such run (404), not 500"
http GET "/api/runs?limit=ten"
expect_status 400 "a limit that is not a number gets 400"
expect_contains "$OUT" "query parameter 'limit' must be an integer, got 'ten'" \
  "the answer names the parameter and the value"
http GET "/api/runs/$run1/logs?after=-5" "" "$auth"
expect_status 400 "a negative ?after= gets 400"

# ---- artifacts --------------------------------------------------------------------------------
http GET "/api/runs/$run1/artifacts"
expect_status 401 "listing artifacts needs the token"
http GET "/api/runs/$run1/artifacts" "" "$auth"
expect_status 200 "artifacts are listed with the token"
expect_json '[(a["name"], a["files"]) for a in d["artifacts"]]' '[["build-output", 2]]' "the uploaded artifact with its two files"
expect_json 'd["artifacts"][0]["size"] > 0' true "its size is known"
http GET "/api/runs/$run1/artifacts/build-output"
expect_status 401 "downloading an artifact needs the token"
curl -sS -D "$ITEST_DIR/zip.headers" -o "$ITEST_DIR/a.zip" -H "$auth" \
  "$SERVE_BASE/api/runs/$run1/artifacts/build-output"
expect_contains "$(tr -d '\r' <"$ITEST_DIR/zip.headers")" "Content-Type: application/zip" "the download is a zip"
expect_contains "$(tr -d '\r' <"$ITEST_DIR/zip.headers")" 'filename="build-output.zip"' "named after the artifact"
zip_check="$(python3 - "$ITEST_DIR/a.zip" <<'EOF_PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(sorted(n for n in z.namelist() if not n.endswith("/")), z.read("sub/result.txt").decode().strip())
EOF_PY
)" || true
expect_contains "$zip_check" "['sub/result.txt', 'top.txt'] built in attempt 1" "the zip holds the artifact's files as uploaded"
http GET "/api/runs/$run1/artifacts/nope" "" "$auth"
expect_status 404 "an unknown artifact is 404"
http GET "/api/runs/99999/artifacts" "" "$auth"
expect_status 404 "the artifacts of an unknown run are 404"

# ---- kiln cancel -------------------------------------------------------------------------------
kiln cancel "$run1" --server "$SERVE_BASE" --token wrong
expect_rc 2 "kiln cancel with a wrong token is refused"
kiln cancel 99999 --server "$SERVE_BASE" --token "$SERVE_TOKEN"
expect_rc 2 "kiln cancel of an unknown run is refused"
kiln cancel "$run1" --server "$SERVE_BASE" --token "$SERVE_TOKEN"
expect_rc 2 "kiln cancel of a finished run is refused (409)"
expect_contains "$ERR" "HTTP 409: run $run1 is not running on this server" "and says why"
kiln cancel "$run1" --server "http://127.0.0.1:1" --token "$SERVE_TOKEN"
expect_rc 3 "kiln cancel of an unreachable server exits 3"

# ---- kiln rerun --failed ----------------------------------------------------------------------
kiln rerun "$run1" --failed --server "$SERVE_BASE" --token wrong
expect_rc 2 "kiln rerun with a wrong token is refused"
kiln rerun 99999 --server "$SERVE_BASE" --token "$SERVE_TOKEN"
expect_rc 2 "kiln rerun of an unknown run is refused"
printf '{"failed_only": "yes"}' >"$ITEST_DIR/bad-rerun.json"
http POST "/api/runs/$run1/rerun" "$ITEST_DIR/bad-rerun.json" "$auth"
expect_status 400 "a re-run body with a non-boolean failed_only is 400"
kiln rerun "$run1" --failed --server "$SERVE_BASE" --token-file "$ITEST_DIR/missing-token"
expect_rc 2 "kiln rerun with an unreadable --token-file is bad input"
expect_contains "$ERR" "--token-file $ITEST_DIR/missing-token: cannot read a token" "and says which file"
printf '%s\n' "$SERVE_TOKEN" >"$ITEST_DIR/token"
kiln rerun "$run1" --failed --server "$SERVE_BASE" --token-file "$ITEST_DIR/token"
expect_rc 0 "kiln rerun --failed queues a re-run (token from --token-file)"
expect_json 'd["attempt"]' 2 "it will be attempt 2"
rerun_trigger="$(json_eval - 'd["trigger"]')"
check "the re-run's trigger finishes" trigger_done "$rerun_trigger" finished
http GET "/api/triggers/$rerun_trigger"
expect_json "d['rerun'] == {'run': $run1, 'failed_only': True}" true "the trigger records the re-run"
expect_json 'd["sha"]' "$sha" "at the same commit"
run2="$(json_eval - 'd["run_ids"][0]')"
http GET "/api/runs/$run2"
expect_json 'd["status"]' success "the re-run succeeds"
expect_json 'd["attempt"]' 2 "attempt 2"
expect_json 'd["rerun_of"]' "$run1" "of the first run"
expect_json 'd["number"]' "$run1_number" "with the same run number"
expect_json 'sorted((j["key"], j["conclusion"]) for j in d["jobs"])' '[["build", "success"], ["lint", "success"], ["report", "success"], ["test", "success"]]' "every job succeeded"
expect_json 'sorted(j["key"] for j in d["jobs"] if j["reused_from"])' '["build", "lint"]' "the jobs that succeeded and need nothing that failed were reused"
expect_json '[j for j in d["jobs"] if j["key"] == "build"][0]["reused_from"]["run"]' "$run1" "the build job was reused from the first run"
expect_json '[j for j in d["jobs"] if j["key"] == "build"][0]["message"]' "reused from run $run1" "its message says so"
expect_json '[j for j in d["jobs"] if j["key"] == "test"][0]["reused_from"]' None "the test job ran again"
http GET "/api/runs/$run2/logs?limit=0" "" "$auth"
expect_not_contains "$OUT" "BUILD-RAN" "the build job's steps did not run again"
expect_not_contains "$OUT" "LINT-RAN" "nor the lint job's"
expect_contains "$OUT" "REPORT-RAN attempt=2" "the job that succeeded in attempt 1 but needs the failed one ran again"
expect_contains "$OUT" "TEST attempt=2/2 version=$version1 artifact=built in attempt 1" \
  "the test job ran as attempt 2 with the reused build's output and artifact"
expect_contains "$OUT" "1 flaky" "the JUnit test that failed in attempt 1 and passed now is flaky"
kiln report --store "$ITEST_DIR/state/kiln.db" "$run2" --format json
expect_json 'd["tests"]["flaky_tests"]' '[{"job": "test", "test": "unit::test_io"}]' "kiln report lists it as flaky"
http GET "/api/runs/$run2/artifacts" "" "$auth"
expect_json '[a["name"] for a in d["artifacts"]]' '["build-output"]' "the reused job's artifact belongs to the re-run too"

kiln rerun "$run2" --failed --server "$SERVE_BASE" --token "$SERVE_TOKEN"
expect_rc 2 "re-running the failed jobs of a run that succeeded is refused"

# ---- kiln rerun: every job ---------------------------------------------------------------------
KILN_API_TOKEN="$SERVE_TOKEN" kiln rerun "$run2" --server "$SERVE_BASE"
expect_rc 0 "kiln rerun queues a full re-run (token from \$KILN_API_TOKEN)"
full_trigger="$(json_eval - 'd["trigger"]')"
check "the full re-run's trigger finishes" trigger_done "$full_trigger" finished
http GET "/api/triggers/$full_trigger"
run3="$(json_eval - 'd["run_ids"][0]')"
http GET "/api/runs/$run3"
expect_json 'd["attempt"]' 3 "attempt 3"
expect_json 'all(j["reused_from"] is None for j in d["jobs"]) and len(d["jobs"])' 4 "nothing is reused"
http GET "/api/runs/$run3/logs?limit=0" "" "$auth"
expect_contains "$OUT" "BUILD-RAN attempt=3" "the build job ran again"

# ---- GET /metrics -----------------------------------------------------------------------------
http GET /metrics
expect_status 200 "GET /metrics answers without a token"
metrics="$OUT"
expect_contains "$metrics" 'kiln_runs{status="failure"} 1' "kiln metrics' run counts"
expect_contains "$metrics" 'kiln_runs{status="success"} 2' "both re-runs counted"
expect_contains "$metrics" "kiln_gpus 0" "kiln metrics' GPU families"
expect_contains "$metrics" 'kiln_serve_triggers{status="finished"} 3' "triggers by status"
expect_contains "$metrics" 'kiln_serve_triggers{status="queued"} 0' "none queued"
expect_contains "$metrics" "kiln_serve_runs_running 0" "no run running"
expect_contains "$metrics" 'kiln_serve_webhook_deliveries_total{result="accepted"} 1' "one delivery accepted"
expect_contains "$metrics" 'kiln_serve_webhook_deliveries_total{result="bad_signature"} 4' "four refused for their signature"
expect_contains "$metrics" 'kiln_serve_webhook_deliveries_total{result="malformed"} 2' "two malformed"
expect_contains "$metrics" 'kiln_serve_webhook_deliveries_total{result="too_large"} 1' "one too large"
printf '%s\n' "$metrics" >"$ITEST_DIR/metrics.prom"
RC=0
/usr/bin/promtool check metrics <"$ITEST_DIR/metrics.prom" >"$ITEST_DIR/promtool.out" 2>&1 || RC=$?
check "promtool accepts the exposition without advice (exit $RC)" test "$RC" -eq 0
sed 's/^/    promtool: /' "$ITEST_DIR/promtool.out"
kiln metrics --store "$ITEST_DIR/state/kiln.db"
expect_rc 0 "kiln metrics on the server's store"
check "GET /metrics is kiln metrics' text plus the kiln_serve_ families" \
  test "$(grep -v '^kiln_serve_\|^# [A-Z]* kiln_serve_' <<<"$metrics")" == "$OUT"

# ---- server-sent event streams do not starve the server --------------------------------------
# Each open stream holds one of the HTTP server's threads for as long as its run lasts: with
# more viewers than threads, webhooks and /healthz would wait for a run to end.
git -C "$repo" checkout -q -b hold
cat >"$repo/.github/workflows/hold.yml" <<EOF
name: hold
on:
  push:
    branches: [hold]
jobs:
  wait:
    runs-on: linux
    steps:
      - run: while [ ! -e "$ITEST_DIR/release" ]; do sleep 0.2; done; echo released
EOF
commit_all "$repo" "a workflow that waits"
git -C "$repo" push -q "$bare" hold
hold_sha="$(git -C "$repo" rev-parse HEAD)"
sed -e "s|refs/heads/main|refs/heads/hold|" -e "s|$sha|$hold_sha|" "$ITEST_DIR/push.json" >"$ITEST_DIR/hold.json"
deliver "$ITEST_DIR/hold.json" push delivery-hold
expect_status 202 "a push of the waiting workflow is accepted"
hold_trigger="$(json_eval - 'd["trigger"]')"
hold_run_started() {
  http GET "/api/runs?limit=50"
  hold_run="$(json_eval - '[r["id"] for r in d["runs"] if r["name"] == "hold" and r["status"] == "running"][0]' 2>/dev/null)"
  [[ -n "$hold_run" ]]
}
check "the waiting run starts" wait_until 120 hold_run_started
streams=()
for _ in $(seq 24); do
  curl -sS -N -H "$auth" "$SERVE_BASE/api/runs/$hold_run/events" >/dev/null 2>&1 &
  streams+=($!)
  itest_track_pid "$!"
done
sleep 2
health="$(curl -sS --max-time 30 -o /dev/null -w '%{http_code}' "$SERVE_BASE/healthz" || echo timeout)"
check "with 24 event streams open, /healthz still answers ($health)" test "$health" = 200
deliver "$ITEST_DIR/push.json" push delivery-1
expect_status 200 "and a webhook is still answered (a redelivery of delivery-1)"
touch "$ITEST_DIR/release"
check "the waiting run's trigger finishes" trigger_done "$hold_trigger" finished
for pid in "${streams[@]}"; do
  if ! wait_exit "$pid" 60; then fail "an event stream did not end with its run"; fi
done

serve_stop
itest_end
