#!/usr/bin/env bash
# The dashboard end to end (docs/serve.md#dashboard, docs/testing.md): kiln serve with a local
# repository and two simulated GPUs; headless Chromium (Debian's /usr/bin/chromium, driven by
# playwright-core from dashboard/node_modules) opens the dashboard, a signed push webhook (curl
# + openssl, as in serve_test.sh) starts a run, and the page shows it live: the run appears and
# goes from queued/running to success, its log lines stream in while the job still runs (the job
# waits at a gate the browser opens once it has seen the first lines), ANSI colours, groups and
# search work, the job graph has its needs edges, the GPU fleet shows the GPU the run holds,
# then the tests, benchmarks and telemetry tabs. Then the actions (docs/serve.md#dashboard): a
# failed run's steps, annotations, matrix group and failing step opened at its end, its artifact
# downloaded, its failed jobs re-run; a slow run cancelled; a stranger's fork pull request
# approved (and no button for a reader without a token). GET /api/runs/ID/report is checked against
# `kiln report RUN --format json`. Screenshots go to <build>/test-artifacts/dashboard-*.png.
# The browser script (tests/e2e/dashboard.mjs) prints "ok: ..." / "FAIL: ..." lines, counted here.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin dashboard
source "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

e2e_require
shots=(runs-live gpus-leased run-live run-done summary tests benchmarks telemetry gpus failure-class
  run-failed rerun cancelled approve quarantine)
for shot in "${shots[@]}"; do rm -f "$E2E_ARTIFACTS/dashboard-$shot.png"; done
secret="webhook-secret-$RANDOM"
token="api-token-$RANDOM"
gate="$ITEST_DIR/gate"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
# build prints coloured lines, a group and numbered lines a second apart, then waits at the
# gate (a file the browser script creates once it has seen LIVE-LINE 3) and prints more; gpu
# holds a simulated GPU until the gate opens; test needs both and stores JUnit results (one
# failure, which does not fail the job) and a benchmark result, and writes a step summary with
# an attacker's script, event handler and javascript: link; long prints 6000 lines.
cat >"$repo/bench.json" <<'EOF_JSON'
[{"name": "attention", "unit": "ms", "value": 1.9189999999999998, "samples": [1.9, 1.9189999999999998, 1.94]}]
EOF_JSON
mkdir -p "$repo/results"
cat >"$repo/results/pytest.xml" <<'EOF_XML'
<testsuite name="pytest"><testcase classname="tests.test_model" name="test_forward" time="0.5"/>
<testcase classname="tests.test_model" name="test_backward" time="1.5"><failure message="assert 1 == 2">E assert 1 == 2</failure></testcase>
</testsuite>
EOF_XML
write_workflow "$repo" ci.yml <<EOF_YML
name: Dashboard E2E
on:
  push:
    branches: [main]
env:
  GATE: $gate
jobs:
  build:
    runs-on: [self-hosted, linux]
    steps:
      - name: Compile
        run: |
          printf '\033[31mRED-TEXT\033[0m and \033[1;32mGREEN-TEXT\033[0m\n'
          echo "::group::Compile details"
          echo "INSIDE-GROUP"
          echo "::endgroup::"
          for i in 1 2 3; do echo "LIVE-LINE \$i"; sleep 1; done
          for _ in \$(seq 1 1800); do [ -e "\$GATE" ] && break; sleep 0.1; done
          for i in 1 2 3; do echo "AFTER-GATE \$i"; sleep 1; done
  gpu:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          echo "GPU-JOB on \$KILN_GPU_UUIDS"
          for _ in \$(seq 1 1800); do [ -e "\$GATE" ] && break; sleep 0.1; done
  long:
    runs-on: [self-hosted, linux]
    steps:
      - run: seq -f 'LONG-%g' 1 6000
  test:
    needs: [build, gpu]
    runs-on: [self-hosted, linux]
    steps:
      - uses: actions/checkout@v4
      - run: |
          echo bench.json >> "\$KILN_BENCHMARKS"
          echo results/pytest.xml >> "\$KILN_TEST_RESULTS"
      - name: An attacker's summary
        run: |
          cat >> "\$GITHUB_STEP_SUMMARY" <<'EOF_MD'
          ### Benchmark summary
          | kernel | ms |
          |---|---|
          | attention | 1.92 |

          <script>window.pwned = "script"</script>

          <img src=x onerror="window.pwned = 'onerror'">

          [click me](javascript:window.pwned='link') and [docs](https://example.invalid/docs)
          EOF_MD
EOF_YML
# The broken branch (a push the browser script triggers) runs only this one: a job whose class
# (code) and evidence the run page shows, with an artifact, two annotations and a long failing
# step, and a matrix of three whose mi250 instance fails (the dashboard groups them, re-runs the
# failed jobs).
write_workflow "$repo" fail.yml <<'EOF_YML'
name: Broken
on:
  push:
    branches: [broken]
jobs:
  broken:
    runs-on: [self-hosted, linux]
    steps:
      - name: Prepare
        run: mkdir -p out && echo "built widgets" > out/widgets.txt
      - uses: actions/upload-artifact@v4
        with:
          name: widgets-out
          path: out
      - name: Break
        run: |
          for i in $(seq 1 200); do echo "FAIL-LINE $i"; done
          echo "::warning file=src/util.h,line=7::deprecated helper"
          echo "::error file=src/kernel.cu,line=42,col=5::bad cast in kernel"
          echo "FAIL-LAST"
          exit 3
  matrix:
    runs-on: [self-hosted, linux]
    strategy:
      fail-fast: false
      matrix:
        gpu: [a100, h100, mi250]
    steps:
      - name: Check
        run: test "${{ matrix.gpu }}" != mi250
EOF_YML
# The slow branch's run waits until the browser cancels it; a fork's pull request by a
# stranger runs pr.yml once the browser approved it.
write_workflow "$repo" slow.yml <<'EOF_YML'
name: Slow
on:
  push:
    branches: [slow]
jobs:
  wait:
    runs-on: [self-hosted, linux]
    steps:
      - name: Wait
        run: |
          echo "SLOW-STARTED"
          sleep 600
EOF_YML
write_workflow "$repo" pr.yml <<'EOF_YML'
name: Pull request
on: pull_request
jobs:
  hello:
    runs-on: [self-hosted, linux]
    steps:
      - run: echo "PR-RAN"
EOF_YML
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"
git -C "$bare" branch broken "$sha"
git -C "$bare" branch slow "$sha"
git -C "$bare" update-ref refs/pull/7/head "$sha"

cat >"$ITEST_DIR/gpus.json" <<'EOF_JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "arch": "sm_90",
           "telemetry": {"utilization_pct": 75, "power_w": 300, "temperature_c": 55}},
          {"vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "arch": "sm_90",
           "telemetry": {"utilization_pct": 75, "power_w": 300, "temperature_c": 55}}]}
EOF_JSON
cat >"$ITEST_DIR/kiln.yml" <<EOF_YML
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
EOF_YML
mkdir -p "$ITEST_DIR/state"
# A test quarantined by hand, which the dashboard's tests page lists (and its JUnit failure
# below does not fail a job anyway: the step exits 0).
kiln tests quarantine tests.test_model::test_backward --repository acme/widgets \
  --store "$ITEST_DIR/state/kiln.db" --for 7d --reason "flaky on CI (e2e)"
expect_rc 0 "kiln tests quarantine on the server's store"
"$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
  --simulate-gpus "$ITEST_DIR/gpus.json" >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
serve_pid=$!
itest_track_pid "$serve_pid"
wait_until 60 test -s "$ITEST_DIR/port" || {
  cat "$ITEST_DIR/serve.err" >&2
  itest_die "kiln serve did not start listening"
}
base="http://127.0.0.1:$(cat "$ITEST_DIR/port")"

page="$(curl -sS "$base/")"
expect_contains "$page" '<div id="app">' "GET / answers the dashboard page"
asset="$(grep -o '/ui/assets/[^"]*\.js' <<<"$page" | head -1)"
check "the page names its script ($asset)" test -n "$asset"
type="$(curl -sS -o /dev/null -w '%{content_type}' "$base$asset")"
expect_contains "$type" "text/javascript" "the script is served as JavaScript"
code="$(curl -sS -o /dev/null -w '%{http_code}' "$base/ui/assets/missing.js")"
check "a missing asset is 404, not the page (got $code)" test "$code" = 404
expect_contains "$(curl -sS "$base/ui/runs/42")" '<div id="app">' \
  "a client-side route under /ui/ answers the page"

# deliver [pull]: a signed delivery, sent when the browser script asks (it runs this file): the
# push of main, or with "pull" a fork's pull request by mallory, who is not trusted.
cat >"$ITEST_DIR/push.json" <<EOF_JSON
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF_JSON
cat >"$ITEST_DIR/pull.json" <<EOF_JSON
{"action": "opened", "number": 7, "repository": {"full_name": "acme/widgets"},
 "sender": {"login": "mallory"},
 "pull_request": {"number": 7, "user": {"login": "mallory"},
   "head": {"sha": "$sha", "ref": "topic", "repo": {"full_name": "mallory/widgets"}},
   "base": {"ref": "main", "sha": "$sha", "repo": {"full_name": "acme/widgets"}}}}
EOF_JSON
cat >"$ITEST_DIR/deliver.sh" <<EOF_SH
#!/usr/bin/env bash
set -euo pipefail
body='$ITEST_DIR/push.json' event=push delivery=dashboard-1
if [[ "\${1:-}" == pull ]]; then body='$ITEST_DIR/pull.json' event=pull_request delivery=dashboard-2; fi
signature="sha256=\$(openssl dgst -sha256 -hmac '$secret' <"\$body" | sed 's/^.*= //')"
curl -sS -f -X POST -H 'Content-Type: application/json' -H "X-GitHub-Event: \$event" \
  -H "X-GitHub-Delivery: \$delivery" -H "X-Hub-Signature-256: \$signature" \
  --data-binary "@\$body" '$base/webhooks/github'
EOF_SH
chmod +x "$ITEST_DIR/deliver.sh"

export E2E_BASE="$base" E2E_TOKEN="$token" E2E_GATE="$gate" E2E_DELIVER="$ITEST_DIR/deliver.sh"
export E2E_GPUS=2
e2e_browser dashboard.mjs
for shot in "${shots[@]}"; do
  check "screenshot $E2E_ARTIFACTS/dashboard-$shot.png" test -s "$E2E_ARTIFACTS/dashboard-$shot.png"
done

# The report endpoint is the document of kiln report --format json (one serializer).
run_id="$(curl -sS "$base/api/runs" | python3 -c 'import json,sys; print([r["id"] for r in json.load(sys.stdin)["runs"] if r["name"] == "Dashboard E2E"][0])')"
# The job graph's edges come from the API: each job's node and the nodes it needs.
curl -sS "$base/api/runs/$run_id" >"$ITEST_DIR/last.out"
expect_json 'sorted((j["node"], j["needs"]) for j in d["jobs"])' \
  '[["build", []], ["gpu", []], ["long", []], ["test", ["build", "gpu"]]]' \
  "GET /api/runs/ID names each job's node and needs"
curl -sS "$base/api/runs/$run_id/report" >"$ITEST_DIR/api-report.json"
kiln report "$run_id" --format json --store "$ITEST_DIR/state/kiln.db"
expect_rc 0 "kiln report --format json on the server's store"
same="$(python3 - "$ITEST_DIR/api-report.json" "$ITEST_DIR/last.out" <<'EOF_PY'
import json, sys
api, cli = (json.load(open(p)) for p in sys.argv[1:3])
print(api == cli, api["tests"]["failed"], len(api["benchmarks"]))
EOF_PY
)"
expect_contains "$same" "True 1 1" \
  "GET /api/runs/ID/report equals kiln report --format json (with its test and benchmark)"
code="$(curl -sS -o /dev/null -w '%{http_code}' "$base/api/runs/9999/report")"
check "the report of an unknown run is 404 (got $code)" test "$code" = 404

kill -TERM "$serve_pid"
if wait_exit "$serve_pid" 120; then
  check "SIGTERM stops the server with exit code 0 (got $WAIT_RC)" test "$WAIT_RC" = 0
else
  fail "the server did not stop after SIGTERM"
fi
itest_end
