#!/usr/bin/env bash
# kiln serve bisects a perf regression (serve.bisect.on_regression): a repository whose 9th
# commit makes a GPU benchmark 20% slower; six pushes make the history, a push of commits 7..13
# regresses. The server queues one bisection (a trigger of its own, event "bisect"), runs the
# job at commits between the last good run (6) and the bad one (13) on branches kiln-bisect/N,
# and posts the first bad commit (9) on the regressed run (API run JSON), as the commit status
# "kiln / bisect" and as the trigger's message; `kiln runs` lists its runs as bisect runs.
# The bisection runs after a restart on a host whose GPU 0 is another H200: its jobs are pinned
# to the regressed job's GPU (by UUID), not given GPU 0. Bisections stored by hand then check the
# rest of the pin (no GPU of the model: refused at once; the model without the very GPU: another
# of that model), serve.bisect.max_commits and a GOOD that is not an ancestor of BAD.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_bisect
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"

secret="webhook-secret-$RANDOM"
token="api-token-$RANDOM"
SERVE_TOKEN="$token"
auth="Authorization: Bearer $token"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
gpu_a="GPU-aaaaaaaa-1111-2222-3333-000000000001"
gpu_b="GPU-bbbbbbbb-1111-2222-3333-000000000002"
cat >"$ITEST_DIR/one-gpu.json" <<EOF
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771,
           "uuid": "$gpu_a"}]}
EOF
# After the restart: another H200 first, the regressed job's GPU second.
cat >"$ITEST_DIR/two-gpus.json" <<EOF
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771,
           "uuid": "$gpu_b"},
          {"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771,
           "uuid": "$gpu_a"}]}
EOF

make_repo "$repo"
cat >"$repo/bench.py" <<'EOF_PY'
import json, random, sys
level = float(open("level.txt").read())
random.seed(open("change.txt").read() + str(random.random()))
json.dump([{"name": "attention", "unit": "ms", "value": 0,
            "samples": [level * (1 + random.gauss(0, 0.01)) for _ in range(10)]}], open(sys.argv[1], "w"))
EOF_PY
write_workflow "$repo" bench.yml <<EOF_YML
on:
  push:
    branches-ignore: [hold]
jobs:
  bench:
    runs-on: [self-hosted, linux, gpu]
    steps:
      - uses: actions/checkout@v4
      - run: |
          python3 bench.py results.json
          echo results.json >> "\$KILN_BENCHMARKS"
          echo "\$KILN_GPU_UUIDS change-\$(cat change.txt)" >> "$ITEST_DIR/gpus.log"
EOF_YML
# A push of branch hold runs a job that waits for a file: it keeps the bisection queued.
write_workflow "$repo" hold.yml <<EOF_YML
on:
  push:
    branches: [hold]
jobs:
  hold:
    runs-on: [self-hosted, linux]
    steps:
      - run: while [ ! -e "$ITEST_DIR/release" ]; do sleep 0.2; done
EOF_YML
commit_change() {  # commit_change N: change N, slower from the 9th on
  if (($1 < 9)); then echo 100 >"$repo/level.txt"; else echo 120 >"$repo/level.txt"; fi
  echo "$1" >"$repo/change.txt"
  commit_all "$repo" "change $1"
}
commit_change 1
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha_of() { git -C "$repo" log --format=%H --grep="^change $1\$"; }

# The forge: records every status POST as a JSON line.
cat >"$ITEST_DIR/forge.py" <<'EOF'
import http.server, json, sys
log, port_file = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path, "body": json.loads(body)}) + "\n")
        self.send_response(201); self.end_headers()
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f: f.write(str(server.server_port))
import os; os.rename(port_file + ".tmp", port_file)
server.serve_forever()
EOF
python3 "$ITEST_DIR/forge.py" "$ITEST_DIR/statuses.jsonl" "$ITEST_DIR/forge.port" &
itest_track_pid $!
wait_until 30 test -s "$ITEST_DIR/forge.port" || itest_die "the recording forge did not start"

write_config() {  # write_config BISECT-YAML
  cat >"$ITEST_DIR/kiln.yml" <<EOF
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  max_concurrent_runs: 1
  shutdown_grace: 10m
  bisect:
$1
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
      statuses:
        api_url: http://127.0.0.1:$(cat "$ITEST_DIR/forge.port")/api/v1
        token: forge-token
EOF
}
start_server() {  # start_server INVENTORY
  rm -f "$ITEST_DIR/port"
  "$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
    --simulate-gpus "$1" >>"$ITEST_DIR/serve.out" 2>>"$ITEST_DIR/serve.err" &
  SERVE_PID=$!
  itest_track_pid "$SERVE_PID"
  wait_until 60 test -s "$ITEST_DIR/port" || {
    cat "$ITEST_DIR/serve.err" >&2
    itest_die "kiln serve did not start listening"
  }
  SERVE_BASE="http://127.0.0.1:$(cat "$ITEST_DIR/port")"
}
push_and_trigger() {  # push_and_trigger BRANCH: prints the trigger id
  git -C "$repo" push -q --force "$bare" "HEAD:refs/heads/$1"
  kiln trigger acme/widgets "$1" --server "$SERVE_BASE" --token "$token" --wait 0
  json_eval - 'd["trigger"]'
}

# serve.bisect's keys are checked, located.
write_config "    on_regresion: true"
kiln serve --config "$ITEST_DIR/kiln.yml"
expect_rc 2 "an unknown serve.bisect key is bad input"
expect_contains "$ERR" "kiln.yml:9:5" "located at its line and column"
expect_contains "$ERR" "serve.bisect: unknown key 'on_regresion'" "naming the key"
write_config "    repeat: 0"
kiln serve --config "$ITEST_DIR/kiln.yml"
expect_rc 2 "serve.bisect.repeat 0 is bad input"
expect_contains "$ERR" "serve.bisect.repeat: expected a number from 1 to 20" "saying the range"

write_config "    on_regression: true
    max_commits: 16
    repeat: 3"
start_server "$ITEST_DIR/one-gpu.json"
history_runs=()
for i in 1 2 3 4 5 6; do
  ((i == 1)) || commit_change "$i"
  id="$(push_and_trigger main)"
  check "history run $i finishes" trigger_done "$id" finished
  http GET "/api/triggers/$id"
  history_runs+=("$(json_eval - 'd["run_ids"][0]')")
done
http GET "/api/triggers?limit=0"
expect_json 'sum(t["event"] == "bisect" for t in d["triggers"])' 0 \
  "runs without a regression start no bisection"

for i in 7 8 9 10 11 12 13; do commit_change "$i"; done
good="$(sha_of 6)"
bad="$(sha_of 13)"
culprit="$(sha_of 9)"
regressed="$(push_and_trigger main)"
hold="$(push_and_trigger hold)"
check "the regressed push finishes" trigger_done "$regressed" finished
http GET "/api/triggers/$regressed"
run_id="$(json_eval - 'd["run_ids"][0]')"
http GET "/api/runs/$run_id"
expect_json 'd["jobs"][0]["conclusion"]' failure "the perf gate fails the regressed job"
expect_json 'd["bisect"]["status"]' queued "the regressed run says its bisection is queued"
bisect_trigger="$(json_eval - 'd["bisect"]["trigger"]')"
http GET "/api/triggers/$bisect_trigger"
expect_json 'd["event"]' bisect "the bisection is a trigger of its own kind"
expect_json 'd["status"]' queued "queued behind the running trigger"
expect_json 'd["bisect"]["good"]' "$good" "from the last good run's commit"
expect_json 'd["bisect"]["bad"]' "$bad" "to the regressed run's commit"
expect_json 'd["bisect"]["benchmark"]' attention "of the regressed benchmark"
expect_json 'd["bisect"]["gpu_uuids"]' "[\"$gpu_a\"]" "on the regressed job's GPU"
expect_json 'd["bisect"]["gpu_models"]' '["NVIDIA H200"]' "of its model"

# Restart on a host with another H200 as GPU 0: the queued bisection runs there.
kill -TERM "$SERVE_PID"
# The held trigger ends only once the server takes no new one: the bisection stays queued.
wait_until 60 grep -q "taking no new trigger" "$ITEST_DIR/serve.out" ||
  fail "the first server does not say it stopped taking triggers"
touch "$ITEST_DIR/release"
wait_exit "$SERVE_PID" 120 && [[ "$WAIT_RC" == 0 ]] && pass "the first server stops cleanly" ||
  fail "the first server did not stop cleanly (exit ${WAIT_RC:-none})"
expect_eq "$(sqlite3 "$ITEST_DIR/state/kiln.db" "SELECT status FROM triggers WHERE id = $bisect_trigger")" \
  queued "the bisection stays queued for the next server"
lines_before="$(wc -l <"$ITEST_DIR/gpus.log")"
start_server "$ITEST_DIR/two-gpus.json"
check "the bisection finishes" trigger_done "$bisect_trigger" finished
http GET "/api/triggers/$bisect_trigger"
expect_contains "$(json_eval - 'd["message"]')" "first bad commit ${culprit:0:10} change 9: attention +" \
  "the trigger names the first bad commit"
bisect_runs="$(json_eval - 'd["run_ids"]')"
expect_json '2 <= len(d["run_ids"]) <= 5' true "its runs are the trigger's (8 commits: at most 5 runs)"
http GET "/api/runs/$run_id"
expect_json 'd["bisect"]["status"]' finished "the result is posted on the regressed run"
expect_json 'd["bisect"]["first_bad"]' "$culprit" "naming the first bad commit"
expect_json 'd["bisect"]["subject"]' "change 9" "with its subject"
expect_json 'd["bisect"]["last_good"]' "$(sha_of 8)" "and the last good one"
expect_json '15 < d["bisect"]["change_percent"] < 25' true "with the change (+20%)"
expect_json 'sorted(r for m in d["bisect"]["measured"] for r in m["runs"]) == sorted('"$bisect_runs"')' \
  true "and the runs that show it"
first_bisect_run="$(json_eval - 'd["bisect"]["measured"][0]["runs"][0]')"
http GET "/api/runs/$first_bisect_run"
expect_json 'd["bisect"]["of_run"]' "$run_id" "a bisection's run says which run it bisects"
expect_json 'd["ref"]' "refs/heads/kiln-bisect/$bisect_trigger" "on a branch of its own"
new_lines="$(tail -n +"$((lines_before + 1))" "$ITEST_DIR/gpus.log")"
check "the bisection's jobs ran" test -n "$new_lines"
expect_not_contains "$new_lines" "$gpu_b" "no bisection job ran on GPU 0, another H200"
expect_eq "$(grep -c "^$gpu_a " <<<"$new_lines")" "$(wc -l <<<"$new_lines")" \
  "every one ran on the regressed job's GPU"
http GET "/api/triggers?limit=0"
expect_json 'sum(t["event"] == "bisect" for t in d["triggers"])' 1 \
  "one bisection for the regression (the bisection's own slow runs start none)"

kiln runs --store "$ITEST_DIR/state/kiln.db" -n 0
expect_match "$OUT" "bisect +kiln-bisect/$bisect_trigger" "kiln runs lists the bisection's runs as such"
kiln runs --server "$SERVE_BASE" --token "$token" --json -n 0
expect_json "sum(1 for r in d if r['bisect'] and r['bisect'].get('of_run') == $run_id)" \
  "$(json_eval <(echo "$bisect_runs") 'len(d)')" "and through the server, with what they bisect"

bisect_status() {  # bisect_status STATE DESCRIPTION-START: a status of the regressed commit
  python3 - "$ITEST_DIR/statuses.jsonl" "$bad" "$1" "$2" <<'PY'
import json, sys
path, sha, state, start = sys.argv[1:]
found = any(s["path"].endswith("/statuses/" + sha) and s["body"]["context"] == "kiln / bisect"
            and s["body"]["state"] == state and s["body"]["description"].startswith(start)
            for s in map(json.loads, open(path)))
sys.exit(0 if found else 1)
PY
}
check "a pending commit status on the regressed commit while it bisects" \
  bisect_status pending "bisecting attention from ${good:0:10}"
check "then one naming the first bad commit" \
  bisect_status failure "first bad commit ${culprit:0:10} change 9: attention +"

serve_stop

# Pinning on a host without the regressed job's GPU: two bisections stored as request_bisections
# stores them (for two history runs), on a host with an A100 as GPU 0 and another H200.
cat >"$ITEST_DIR/three.json" <<EOF
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA A100-SXM4-80GB", "arch": "sm_80",
           "memory_mib": 81920},
          {"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771,
           "uuid": "$gpu_b"}]}
EOF
insert_bisect() {  # insert_bisect RUN MODEL UUID [GOOD BAD]: prints the new trigger's id
  local payload
  payload="$(python3 -c 'import json, sys
run, model, uuid, good, bad = sys.argv[1:]
print(json.dumps({"run": int(run), "job": "bench", "workflow_job": "bench",
                  "workflow": ".github/workflows/bench.yml", "benchmark": "attention",
                  "metric": "value", "good": good, "bad": bad, "threshold_percent": 2.5,
                  "gpu_models": [model], "gpu_driver": "simulated", "gpu_uuids": [uuid]}))' \
    "$1" "$2" "$3" "${4:-$good}" "${5:-$bad}")"
  sqlite3 "$ITEST_DIR/state/kiln.db" "INSERT INTO triggers (repository, event, ref, sha, sender,
    status, payload, created_at, updated_at, identity) VALUES ('acme/widgets', 'bisect',
    'refs/heads/main', '${5:-$bad}', 'kiln', 'queued', '$payload', 1, 1, 'test:$1');
    SELECT last_insert_rowid();"
}
absent_model="$(insert_bisect "${history_runs[0]}" "NVIDIA H100 80GB HBM3" "$gpu_a")"
absent_gpu="$(insert_bisect "${history_runs[1]}" "NVIDIA H200" "$gpu_a")"
too_many="$(insert_bisect "${history_runs[2]}" "NVIDIA H200" "$gpu_b" "$(sha_of 1)" "$bad")"
backwards="$(insert_bisect "${history_runs[3]}" "NVIDIA H200" "$gpu_b" "$bad" "$good")"
write_config "    on_regression: true
    max_commits: 8"
lines_before="$(wc -l <"$ITEST_DIR/gpus.log")"
start_server "$ITEST_DIR/three.json"
check "a bisection whose GPU model the host lacks fails" trigger_done "$absent_model" failed
http GET "/api/triggers/$absent_model"
expect_contains "$(json_eval - 'd["message"]')" \
  "the job asks for gpu:1, but this host has 0 GPU(s) of the bisected testbed (NVIDIA H100 80GB HBM3, driver simulated" \
  "saying the host has no GPU of the bisected testbed"
http GET "/api/runs/${history_runs[0]}"
expect_json 'd["bisect"]["status"]' failed "the failure is posted on the run"
check "a bisection whose very GPU the host lacks runs on its model" \
  trigger_done "$absent_gpu" finished
http GET "/api/triggers/$absent_gpu"
expect_contains "$(json_eval - 'd["message"]')" "first bad commit ${culprit:0:10} change 9" \
  "and names the first bad commit"
new_lines="$(tail -n +"$((lines_before + 1))" "$ITEST_DIR/gpus.log")"
check "its jobs ran" test -n "$new_lines"
check "a bisection over more than max_commits is refused" trigger_done "$too_many" failed
http GET "/api/triggers/$too_many"
expect_contains "$(json_eval - 'd["message"]')" \
  "12 commits from $(sha_of 1 | cut -c1-10) to ${bad:0:10}: more than serve.bisect.max_commits (8)" \
  "saying how many and the limit"
check "a GOOD that is not an ancestor of BAD is refused" trigger_done "$backwards" failed
http GET "/api/triggers/$backwards"
expect_contains "$(json_eval - 'd["message"]')" "${bad:0:10} is not an ancestor of ${good:0:10}" \
  "saying so"
expect_eq "$(grep -c "^$gpu_b " <<<"$new_lines")" "$(wc -l <<<"$new_lines")" \
  "every one on the other H200, none on the A100 (GPU 0)"
serve_stop
itest_end
