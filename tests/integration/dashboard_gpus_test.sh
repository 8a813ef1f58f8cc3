#!/usr/bin/env bash
# The dashboard's GPU page and benchmark trends end to end (docs/serve.md#dashboard): kiln serve
# with four simulated GPUs (0 and 1 on NVLink, 2 and 3 under one PCIe switch, telemetry on 0 and
# 1), a run whose job holds GPUs 0 and 1 until a gate, and a benchmark history of acme/widgets
# with a 20% step. GET /api/gpus names the holder by repository, workflow and job, with the
# model, memory, telemetry and topology; GET /api/benchmarks gives the series of `kiln bench
# history --json` with its change point. Then headless Chromium (tests/e2e/dashboard_gpus.mjs)
# checks the pages show them. Screenshots: <build>/test-artifacts/dashboard-gpus-*.png,
# dashboard-trends.png.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin dashboard_gpus
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
e2e_require
shots=(gpus-held gpus-topology trends)
for shot in "${shots[@]}"; do rm -f "$E2E_ARTIFACTS/dashboard-$shot.png"; done
token="api-token-$RANDOM"
gate="$ITEST_DIR/gate"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF_YML
name: GPU E2E
on: push
jobs:
  hold:
    runs-on: [self-hosted, "gpu:2"]
    steps:
      - run: |
          echo "HOLDING \$KILN_GPU_UUIDS"
          for _ in \$(seq 1 3000); do [ -e "$gate" ] && break; sleep 0.1; done
EOF_YML
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"

cat >"$ITEST_DIR/gpus.json" <<'EOF_JSON'
{"gpus": [
  {"vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "arch": "sm_90", "numa_node": 0,
   "pci_bus_id": "0000:18:00.0",
   "telemetry": {"utilization_pct": 75, "power_w": 300.5, "temperature_c": 55}},
  {"vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "arch": "sm_90", "numa_node": 0,
   "pci_bus_id": "0000:2a:00.0",
   "telemetry": {"utilization_pct": 40, "power_w": 200, "temperature_c": 48}},
  {"vendor": "nvidia", "model": "NVIDIA L40S", "memory_mib": 46068, "arch": "sm_89", "numa_node": 1},
  {"vendor": "nvidia", "model": "NVIDIA L40S", "memory_mib": 46068, "arch": "sm_89", "numa_node": 1}],
 "links": [{"a": 0, "b": 1, "kind": "nvlink", "width": 18},
           {"a": 2, "b": 3, "kind": "pcie-switch", "width": 16}]}
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
      webhook_secret: secret
EOF_YML
mkdir -p "$ITEST_DIR/state"

# A history of 24 results of one benchmark, 2 ms for 12 commits, then 2.4 ms (+20%), a little
# noise; and a flat one. One `kiln bench ingest` per commit, as a job's gate would store them;
# the commits are made-up SHA-1s (a stored result only names its commit).
commit_of() { printf 'commit %s' "$1" | sha1sum | cut -c1-40; }
for i in $(seq 1 24); do
  level=2.0
  [[ $i -gt 12 ]] && level=2.4
  value="$(python3 -c "print($level + ($i % 3) * 0.01)")"
  printf '[{"name": "attention", "unit": "ms", "value": %s}, {"name": "softmax", "unit": "ms", "value": 0.5}]\n' \
    "$value" >"$ITEST_DIR/bench.json"
  kiln bench ingest "$ITEST_DIR/bench.json" -C "$repo" --store "$ITEST_DIR/state/kiln.db" \
    --repository acme/widgets --branch main --commit "$(commit_of "$i")" --testbed e2e
  [[ "$RC" == 0 ]] || itest_die "kiln bench ingest $i failed: $ERR"
done
pass "24 commits of benchmark results stored"

"$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
  --simulate-gpus "$ITEST_DIR/gpus.json" >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
SERVE_PID=$!
itest_track_pid "$SERVE_PID"
wait_until 60 test -s "$ITEST_DIR/port" || {
  cat "$ITEST_DIR/serve.err" >&2
  itest_die "kiln serve did not start listening"
}
SERVE_BASE="http://127.0.0.1:$(cat "$ITEST_DIR/port")"

echo '{"repository": "acme/widgets", "ref": "main"}' >"$ITEST_DIR/trigger.json"
http POST /api/triggers "$ITEST_DIR/trigger.json" "Authorization: Bearer $token"
expect_status 202 "a push is triggered"
held() {
  curl -sS "$SERVE_BASE/api/gpus" | python3 -c \
    'import json, sys; print(sum(g["state"] == "leased" for g in json.load(sys.stdin)["gpus"]))' |
    grep -qx 2
}
check "the job holds two GPUs" wait_until 120 held
http GET /api/gpus
run_id="$(curl -sS "$SERVE_BASE/api/runs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')"
expect_json '[g["state"] for g in d["gpus"]]' '["leased", "leased", "free", "free"]' \
  "the job got the NVLink pair (0, 1)"
expect_json '[d["gpus"][0]["holder"][k] for k in ("repository", "workflow", "job", "url")]' \
  "[\"acme/widgets\", \"GPU E2E\", \"hold\", \"/ui/runs/$run_id\"]" \
  "the holder is named by repository, workflow and job, with the run's page"
expect_json '[d["gpus"][0]["model"], d["gpus"][0]["memory_total_mib"], d["gpus"][2]["model"]]' \
  '["NVIDIA H100 80GB HBM3", 81559, "NVIDIA L40S"]' "each GPU's model and memory"
expect_json '[d["gpus"][0]["telemetry"][k] for k in ("source", "utilization_pct", "temperature_c", "power_w")]' \
  '["live", 75.0, 55.0, 300.5]' "GPU 0's reading from the provider"
expect_json 'd["gpus"][2]["telemetry"]["utilization_pct"]' "None" \
  "a GPU whose provider gives no utilization says null"
expect_json 'd["topology"]' \
  '{"islands": [[0, 1], [2], [3]], "matrix": [[null, "nvlink", "sys", "sys"], ["nvlink", null, "sys", "sys"], ["sys", "sys", null, "pcie-switch"], ["sys", "sys", "pcie-switch", null]]}' \
  "the topology: the NVLink island and the PCIe switch"

http GET /api/benchmarks
expect_status 200 "GET /api/benchmarks"
expect_json '[b["benchmark"] for b in d["benchmarks"]]' '["attention", "softmax"]' \
  "every benchmark of the served repository, by name"
expect_json '[(c["index"], c["commit"]) for c in d["benchmarks"][0]["series"][0]["change_points"]]' \
  "[[12, \"$(commit_of 13)\"]]" "attention's change point is at the 13th commit"
expect_json 'd["benchmarks"][1]["series"][0]["change_points"]' "[]" "softmax has none"
cp "$ITEST_DIR/last.out" "$ITEST_DIR/api-benchmarks.json"
kiln bench history attention --json -C "$repo" --store "$ITEST_DIR/state/kiln.db" \
  --repository acme/widgets
expect_rc 0 "kiln bench history --json"
echo "$OUT" >"$ITEST_DIR/cli-history.json"
same="$(python3 - "$ITEST_DIR/api-benchmarks.json" "$ITEST_DIR/cli-history.json" <<'EOF_PY'
import json, sys
api, cli = (json.load(open(p)) for p in sys.argv[1:3])
print(api["benchmarks"][0]["series"] == cli["series"])
EOF_PY
)"
expect_contains "$same" "True" "the API's series are those of kiln bench history --json"
http GET "/api/benchmarks?limit=0"
expect_status 400 "limit=0 is refused"
http GET "/api/benchmarks?repository=acme/none"
expect_json 'd["benchmarks"]' "[]" "a repository without results has none"

export E2E_BASE="$SERVE_BASE" E2E_TOKEN="$token" E2E_RUN="$run_id" E2E_STEP="$(commit_of 13)"
e2e_browser dashboard_gpus.mjs
for shot in "${shots[@]}"; do
  check "screenshot $E2E_ARTIFACTS/dashboard-$shot.png" test -s "$E2E_ARTIFACTS/dashboard-$shot.png"
done
touch "$gate"
serve_stop
itest_end
