#!/usr/bin/env bash
# GitHub check runs from kiln serve, against a stand-in for GitHub's API that checks the GitHub
# App's JWT with the app's public key: each job's check run starts in_progress and completes
# with its conclusion, the failed step's last lines, the job summary and its ::error annotation
# on the file and line; a "Re-run" on the check (check_run rerequested) re-runs the run's
# failed jobs as its next attempt, once per delivery and once per payload; a key file that is
# no key stops kiln serve at start with FILE:LINE:COL, exit 2.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_checks
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"

secret="webhook-secret-$RANDOM"
token="api-token-$RANDOM"
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
      - run: echo "BUILD-OK"
  test:
    runs-on: linux
    steps:
      - run: |
          echo "## Matmul results" >> "$GITHUB_STEP_SUMMARY"
          echo "::error file=src/mm.cu,line=7,col=3,endColumn=9,title=wrong::expected 4, got 5"
          echo "::warning::no file for this one"
          echo "LAST-LINE-OF-TEST"
          # Fails on the first attempt only: the re-run requested on the check passes.
          test "$GITHUB_RUN_ATTEMPT" -gt 1
  scan:
    runs-on: linux
    steps:
      - run: |
          mkdir -p src
          printf '#include <cuda_runtime.h>\nvoid f(float** p) {\n  cudaMalloc(p, 4);\n  cudaDeviceFlushGPUDirectRDMAWrites(0, 0);\n}\n' >src/k.cu
          @KILN@ hipcheck --format sarif -o hipcheck.sarif --fail-on none src/
          printf '%s\n' '<testsuite name="MathTest">' \
            '<testcase classname="MathTest" name="Adds" file="tests/math_test.cc" line="3"/>' \
            '<testcase classname="MathTest" name="Fails" file="tests/math_test.cc" line="8">' \
            '<failure message="math_test.cc:9&#x0A;Expected equality">math_test.cc:9' \
            'Expected equality of these values</failure></testcase></testsuite>' >junit.xml
      - uses: github/codeql-action/upload-sarif@v3
        with: {sarif_file: hipcheck.sarif, category: hipcheck}
EOF
sed -i "s#@KILN@#$KILN#" "$repo/.github/workflows/ci.yml"
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"

# The app's key (as GitHub gives it: PEM, RSA) and its public half for the stand-in.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$ITEST_DIR/app.pem" 2>/dev/null
openssl pkey -in "$ITEST_DIR/app.pem" -pubout -out "$ITEST_DIR/app.pub"

cat >"$ITEST_DIR/github.py" <<'EOF'
import base64, http.server, json, os, subprocess, sys, tempfile, threading
log, port_file, public_key = sys.argv[1], sys.argv[2], sys.argv[3]
lock = threading.Lock()
next_id = [100]
def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
def jwt_ok(auth):
    if not auth or not auth.startswith("Bearer "): return False
    header, claims, signature = auth[7:].split(".")
    with tempfile.NamedTemporaryFile(delete=False) as sig: sig.write(unb64(signature))
    ok = subprocess.run(["openssl", "dgst", "-sha256", "-verify", public_key, "-signature", sig.name],
                        input=(header + "." + claims).encode(), capture_output=True).returncode == 0
    os.unlink(sig.name)
    return ok and json.loads(unb64(claims))["iss"] == "4242"
class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status); self.send_header("Content-Length", str(len(data)))
        self.end_headers(); self.wfile.write(data)
    def handle_any(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        auth = self.headers.get("Authorization")
        with lock, open(log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "auth": auth,
                                "body": json.loads(body) if body else None}) + "\n")
        if self.path == "/app/installations/77/access_tokens":
            return self.answer(201, {"token": "ghs_fake"}) if jwt_ok(auth) else self.answer(401, {})
        if auth != "token ghs_fake": return self.answer(401, {"message": "Bad credentials"})
        if self.command == "POST" and self.path == "/repos/acme/widgets/check-runs":
            with lock: next_id[0] += 1; run = next_id[0]
            return self.answer(201, {"id": run})
        if self.command == "PATCH" and self.path.startswith("/repos/acme/widgets/check-runs/"):
            return self.answer(200, {})
        self.answer(404, {})
    do_POST = do_PATCH = handle_any
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f: f.write(str(server.server_port))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
EOF
python3 "$ITEST_DIR/github.py" "$ITEST_DIR/github.jsonl" "$ITEST_DIR/github.port" \
  "$ITEST_DIR/app.pub" &
itest_track_pid "$!"
wait_until 30 test -s "$ITEST_DIR/github.port" || itest_die "the stand-in for GitHub did not start"
github="http://127.0.0.1:$(cat "$ITEST_DIR/github.port")"

write_config() {  # write_config KEY-FILE
  cat >"$ITEST_DIR/kiln.yml" <<EOF
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
      checks:
        api_url: $github
        app_id: 4242
        installation_id: 77
        private_key_file: $1
EOF
}

# A key file that holds no key: the server does not start.
write_config app.pub
RC=0
timeout 30 "$KILN" serve --config "$ITEST_DIR/kiln.yml" >"$ITEST_DIR/bad.out" 2>"$ITEST_DIR/bad.err" ||
  RC=$?
if [[ "$RC" == 2 ]]; then pass "kiln serve with a public key as the app's key exits 2"
else fail "kiln serve with a public key as the app's key: exit $RC (want 2)"; fi
expect_contains "$(cat "$ITEST_DIR/bad.err")" \
  "kiln.yml:14:27: error: checks.private_key_file: $ITEST_DIR/app.pub holds no unencrypted PEM RSA private key" \
  "the error names the key's line and column"

write_config app.pem
serve_launch
SERVE_SECRET="$secret"

cat >"$ITEST_DIR/push.json" <<EOF
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF
deliver "$ITEST_DIR/push.json" push delivery-1
expect_status 202 "the push is accepted"
push_trigger="$(json_eval - 'd["trigger"]')"
check "the push's trigger finishes" trigger_done "$push_trigger" finished
http GET "/api/triggers/$push_trigger"
run_id="$(json_eval - 'd["run_ids"][0]')"
http GET "/api/runs/$run_id"
expect_json 'd["status"]' failure "the first attempt fails (the test job)"

# What the stand-in received, as Python objects.
calls() { python3 -c "
import json, sys
calls = [json.loads(l) for l in open('$ITEST_DIR/github.jsonl')]
d = $1
print(json.dumps(d) if isinstance(d, (dict, list)) else d)"; }
expect_eq() { if [[ "$1" == "$2" ]]; then pass "$3"; else fail "$3: got '$1', want '$2'"; fi; }

expect_eq "$(calls "[c['path'] for c in calls if 'access_tokens' in c['path']].__len__()")" 1 \
  "one installation token, bought with the app's JWT, serves every request"
expect_eq "$(calls "sorted(c['body']['name'] for c in calls if c['method'] == 'POST' and c['path'].endswith('/check-runs'))")" \
  '["kiln / build", "kiln / scan", "kiln / test"]' "a check run starts for each job"
expect_eq "$(calls "{c['body']['status'] for c in calls if c['method'] == 'POST' and c['path'].endswith('/check-runs')}.pop()")" \
  in_progress "check runs start in_progress"
expect_eq "$(calls "{c['body']['head_sha'] for c in calls if c['method'] == 'POST' and c['path'].endswith('/check-runs')}.pop()")" \
  "$sha" "on the pushed commit"
# The PATCH that completes the test job's run.
done_of() {  # done_of CONCLUSION PYTHON-EXPR-OVER-b
  calls "[$2 for c in calls if c['method'] == 'PATCH' and (b := c['body']).get('conclusion') == '$1'][-1]"
}
expect_eq "$(done_of failure "b['status']")" completed "the test job's check run completes"
expect_contains "$(done_of failure "b['output']['title']")" "exited with 1" \
  "its title says how the failed step ended"
expect_contains "$(done_of failure "b['output']['summary']")" "LAST-LINE-OF-TEST" \
  "its summary has the failed step's last lines"
expect_contains "$(done_of failure "b['output']['summary']")" "no file for this one" \
  "an annotation without a file is listed in the summary"
expect_contains "$(done_of failure "b['output']['text']")" "## Matmul results" \
  "the job summary is the check run's text"
expect_eq "$(done_of failure "json.dumps(b['output']['annotations'], sort_keys=True)")" \
  '[{"annotation_level": "failure", "end_column": 9, "end_line": 7, "message": "expected 4, got 5", "path": "src/mm.cu", "start_column": 3, "start_line": 7, "title": "wrong"}]' \
  "the ::error annotation is on its file, line and columns"
expect_eq "$(done_of failure "b['external_id']")" "$run_id" "the check run carries its run's id"
expect_eq "$(done_of failure "b['details_url']")" "$SERVE_BASE/ui/runs/$run_id" \
  "and links to the run's page"
expect_contains "$(done_of success "b['output']['title']")" "succeeded in" \
  "the build job's check run completes as success"
expect_eq "$(calls "len([c for c in calls if c['method'] == 'PATCH'])")" 3 \
  "one PATCH per job (their annotations fit one request)"

# The scan job: hipcheck's SARIF findings (upload-sarif) and the failed gtest test, on their lines.
scan_done() {  # scan_done PYTHON-EXPR-OVER-b: of the PATCH whose annotations include src/k.cu
  calls "[$1 for c in calls if c['method'] == 'PATCH' for b in [c['body']] if any(a['path'] == 'src/k.cu' for a in b['output'].get('annotations', []))][-1]"
}
expect_eq "$(scan_done "b['conclusion']")" success "the scan job succeeds (findings and test failures do not fail it)"
expect_eq "$(scan_done "sorted((a['path'], a['start_line'], a['annotation_level']) for a in b['output']['annotations'])")" \
  '[["src/k.cu", 1, "notice"], ["src/k.cu", 3, "notice"], ["src/k.cu", 4, "failure"], ["tests/math_test.cc", 9, "failure"]]' \
  "hipcheck's three findings and the failed test are annotations on their lines"
expect_eq "$(scan_done "[a['title'] for a in b['output']['annotations'] if a['path'] == 'tests/math_test.cc'][0]")" \
  "MathTest::Fails" "the test's annotation is titled with its name"
expect_contains "$(scan_done "b['output']['summary']")" "2 tests: 1 passed, 1 failed" \
  "the summary has the test totals"
expect_contains "$(scan_done "b['output']['summary']")" "| MathTest::Fails | math_test.cc:9 | tests/math_test.cc:9 |" \
  "and the failed test's row"

# "Re-run" on the test job's check: GitHub sends check_run rerequested to the app's webhook.
cat >"$ITEST_DIR/rerequest.json" <<EOF
{"action": "rerequested", "check_run": {"id": 102, "external_id": "$run_id", "head_sha": "$sha"},
 "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF
deliver "$ITEST_DIR/rerequest.json" check_run rerequest-1
expect_status 202 "a rerequested check run is accepted"
expect_json 'd["rerun_of"]' "$run_id" "it re-runs the check run's run"
expect_json 'd["failed_only"]' true "only the failed jobs, as the run failed"
expect_json 'd["attempt"]' 2 "as the run's next attempt"
rerun_trigger="$(json_eval - 'd["trigger"]')"
deliver "$ITEST_DIR/rerequest.json" check_run rerequest-1
expect_status 200 "the same delivery again queues nothing"
deliver "$ITEST_DIR/rerequest.json" check_run rerequest-2
expect_status 200 "the same payload under another delivery id (a replay) queues nothing"
check "the re-run finishes" trigger_done "$rerun_trigger" finished
http GET "/api/triggers/$rerun_trigger"
rerun_run="$(json_eval - 'd["run_ids"][0]')"
http GET "/api/runs/$rerun_run"
expect_json 'd["status"]' success "the second attempt succeeds"
expect_json 'd["attempt"]' 2 "as attempt 2"
expect_eq "$(calls "[c['body']['name'] for c in calls if c['method'] == 'POST' and c['path'].endswith('/check-runs')][3:]")" \
  '["kiln / test"]' "the re-run starts a check run for the test job only"
expect_eq "$(done_of success "b['external_id']")" "$rerun_run" \
  "the re-run's check run carries the new run's id"

sed 's/"rerequested"/"created"/' "$ITEST_DIR/rerequest.json" >"$ITEST_DIR/created.json"
deliver "$ITEST_DIR/created.json" check_run created-1
expect_status 202 "another check_run action is accepted"
expect_contains "$OUT" "ignored" "and starts nothing"
sed "s/\"external_id\": \"$run_id\"/\"external_id\": \"99999\"/" "$ITEST_DIR/rerequest.json" \
  >"$ITEST_DIR/unknown.json"
deliver "$ITEST_DIR/unknown.json" check_run unknown-1
expect_status 404 "a rerequested check run of an unknown run is refused"
sed "s/\"external_id\": \"$run_id\"/\"external_id\": \"ci-123\"/" "$ITEST_DIR/rerequest.json" \
  >"$ITEST_DIR/foreign.json"
deliver "$ITEST_DIR/foreign.json" check_run foreign-1
expect_status 202 "another app's check run (external_id not a run) is accepted"
expect_contains "$OUT" "not a check run of a kiln run" "and starts nothing"
deliver "$ITEST_DIR/rerequest.json" check_run unsigned-1 "sha256=$(printf '%064d' 0)"
expect_status 401 "an unsigned rerequest is refused"

serve_stop
itest_end
