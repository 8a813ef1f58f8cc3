#!/usr/bin/env bash
# kiln usage through the real binary: jobs on simulated GPUs (two H200s, one A100) run by
# kiln run; the GPU-hours, jobs and cost it reports equal a hand count over the store's rows
# (python3's sqlite3, the granted GPUs times each job's time); --by model and --json; a bad
# --by, --since and price are exit 2 (the price at kiln.yml:LINE:COL); GET /api/usage of a
# kiln serve over the same kind of store.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin usage

cat >"$ITEST_DIR/gpus.json" <<'JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771},
          {"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771},
          {"vendor": "nvidia", "model": "NVIDIA A100-SXM4-80GB", "arch": "sm_80", "memory_mib": 81920}]}
JSON
printf 'gpus:\n  cost_per_hour:\n    H200: 3600\n    A100: 1800\n' >"$ITEST_DIR/kiln.yml"

repo="$ITEST_DIR/work"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'YAML'
name: CI
on: push
jobs:
  train:
    runs-on: [self-hosted, "gpu:2", "gpu-model:H200"]
    steps:
      - run: sleep 1.2
  eval:
    runs-on: [self-hosted, "gpu:1", "gpu-model:A100"]
    steps:
      - run: sleep 0.6
  lint:
    runs-on: self-hosted
    steps:
      - run: echo lint
YAML
commit_all "$repo" "jobs on GPUs"
kiln run -C "$repo" --simulate-gpus "$ITEST_DIR/gpus.json" --config "$ITEST_DIR/kiln.yml"
expect_rc 0 "the GPU jobs run on the simulated GPUs"
kiln run -C "$repo" --simulate-gpus "$ITEST_DIR/gpus.json" --config "$ITEST_DIR/kiln.yml"
expect_rc 0 "and run again"

# The hand count: every job row, its granted GPUs from the stored extra, its own times.
hand() {
  python3 - "$repo/.kiln/kiln.db" "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
held = {"all": 0.0, "NVIDIA H200": 0.0, "NVIDIA A100-SXM4-80GB": 0.0}
jobs = gpu_jobs = 0
for started, finished, extra in db.execute("SELECT started_at, finished_at, extra FROM jobs"):
    gpus = (json.loads(extra) or {}).get("gpus", [])
    jobs += 1
    gpu_jobs += bool(gpus)
    for gpu in gpus:
        hours = (finished - started) / 3600000.0
        held["all"] += hours
        held[gpu["model"]] += hours
cost = held["NVIDIA H200"] * 3600 + held["NVIDIA A100-SXM4-80GB"] * 1800
print({"jobs": jobs, "gpu_jobs": gpu_jobs, "held": held["all"], "cost": cost,
       "h200": held["NVIDIA H200"]}[sys.argv[2]])
PY
}
near() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 1e-9 * max(1, abs(b)) else 1)" "$1" "$2"; }

kiln usage -C "$repo" --config "$ITEST_DIR/kiln.yml" --json
expect_rc 0 "kiln usage --json"
expect_json 'd["total"]["jobs"]' "$(hand jobs)" "it counts every job that ran (6)"
expect_json 'd["total"]["gpu_jobs"]' "$(hand gpu_jobs)" "of them the GPU jobs (4)"
check "the GPU-hours held equal the hand count" near "$(json_eval - 'd["total"]["gpu_hours_held"]')" "$(hand held)"
check "the cost equals the hand count at the configured prices" near "$(json_eval - 'd["total"]["cost"]')" "$(hand cost)"
expect_json 'd["rows"][0]["key"]' "$repo" "by repository by default"
expect_json 'd["total"]["unpriced_gpu_hours"] == 0' true "every model has a price"
held_h200="$(hand h200)"
if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 4 * 1.2 / 3600 else 1)" "$held_h200"; then
  pass "the H200 job held two GPUs for at least its sleep, twice"
else fail "H200 GPU-hours $held_h200 are less than the jobs slept"; fi

kiln usage -C "$repo" --config "$ITEST_DIR/kiln.yml" --by model --json
expect_rc 0 "kiln usage --by model"
check "the H200 row holds the H200 hours" near \
  "$(json_eval - '[r for r in d["rows"] if r["key"] == "NVIDIA H200"][0]["gpu_hours_held"]')" "$held_h200"
expect_json '[r["key"] for r in d["rows"] if r["key"] == "(no GPU)"][0]' "(no GPU)" \
  "the CPU job has a row of its own"

kiln usage -C "$repo" --config "$ITEST_DIR/kiln.yml" --by label
expect_rc 0 "kiln usage --by label prints a table"
expect_contains "$OUT" "LABEL" "under the grouping's heading"
expect_contains "$OUT" "gpu-model:H200" "with a row per runs-on label"
kiln usage -C "$repo" --since 1d
expect_rc 0 "kiln usage without prices"
expect_contains "$OUT" "GPU-hours on models without a price" "says the hours that have no price"

kiln usage -C "$repo" --by team
expect_rc 2 "an unknown --by is bad input"
expect_contains "$ERR" "expected repo, branch, workflow, label, model or day, got 'team'" \
  "and says what it takes"
kiln usage -C "$repo" --since lately
expect_rc 2 "a --since that is no duration is bad input"
printf 'gpus:\n  cost_per_hour:\n    H200: cheap\n' >"$ITEST_DIR/bad.yml"
kiln usage -C "$repo" --config "$ITEST_DIR/bad.yml"
expect_rc 2 "a price that is no number is bad input"
expect_contains "$ERR" "bad.yml:3:11: error: gpus.cost_per_hour.H200: expected a price per GPU-hour" \
  "at the price's line and column"

# GET /api/usage: the server's own store, priced by its kiln.yml.
token="api-token-$RANDOM"
bare="$ITEST_DIR/forge/acme/widgets.git"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
mkdir -p "$ITEST_DIR/state"
cp "$repo/.kiln/kiln.db" "$ITEST_DIR/state/kiln.db"  # the server's store holds the runs above
serve_start acme/widgets "$bare" "secret-$RANDOM" "$token"
http GET "/api/usage?since=7d&by=workflow"
expect_status 200 "GET /api/usage answers"
expect_json 'd["by"]' workflow "grouped as asked"
http GET "/api/usage?by=team"
expect_status 400 "GET /api/usage with an unknown grouping is 400"
kiln usage --server "$SERVE_BASE" --by workflow
expect_rc 0 "kiln usage --server"
expect_contains "$OUT" "WORKFLOW" "prints the server's usage as a table"
expect_contains "$OUT" "CI " "with the runs of the server's store"
serve_stop
itest_end
