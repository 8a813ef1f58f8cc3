#!/usr/bin/env bash
# kiln.yml priority: classes order the GPU queue (issue 24): on one simulated GPU the jobs of a
# run start class by class, first come first served within one, where without classes they start
# in plan order. Each job's queue time (how long, and why) is in `kiln run --json`, `kiln report`
# and `kiln metrics` (kiln_job_queue_seconds). Bad priority: keys are exit 2 at FILE:LINE:COL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin priority_test

cp "$KILN_SOURCE_DIR/tests/data/gpu/one-h200.json" "$ITEST_DIR/gpus.json"
order="$ITEST_DIR/order"
repo="$ITEST_DIR/repo"
make_repo "$repo"
# Each job says when it starts; one GPU, so they run one after the other.
job() {
  printf '  %s:\n    runs-on: [self-hosted, gpu%s]\n    steps:\n' "$1" "${2:+, $2}"
  printf '      - run: echo %s >>"%s"; sleep 0.1\n' "$1" "$order"
}
{
  printf 'name: queue\non: push\njobs:\n'
  job first
  job low1 nightly
  job high1 release
  job low2 nightly
  job high2 release
} | write_workflow "$repo" queue.yml
commit_all "$repo" "jobs of three classes"

cat >"$ITEST_DIR/kiln.yml" <<'EOF'
labels: [release, nightly]
priority:
  aging: 1h
  classes:
    - name: release
      branch: main
      label: release
    - name: nightly
      label: nightly
EOF
printf 'labels: [release, nightly]\n' >"$ITEST_DIR/plain.yml"

# ---- without classes: plan order --------------------------------------------------------------
kiln run -C "$repo" --config "$ITEST_DIR/plain.yml" --simulate-gpus "$ITEST_DIR/gpus.json" \
  --max-parallel 8 --json
expect_rc 0 "the run without priority classes"
expect_eq "$(paste -sd' ' "$order")" "first low1 high1 low2 high2" "without classes: plan order"
expect_json '{j["key"]: j["queue"]["priority"] for j in d["runs"][0]["jobs"]}["high1"]' default \
  "every job is in the default class"

# ---- with classes: by class, FIFO within one ---------------------------------------------------
rm "$order"
kiln run -C "$repo" --config "$ITEST_DIR/kiln.yml" --simulate-gpus "$ITEST_DIR/gpus.json" \
  --max-parallel 8 --json
expect_rc 0 "the run with priority classes"
expect_eq "$(paste -sd' ' "$order")" "high1 high2 low1 low2 first" \
  "release first, then nightly, then the default class; in plan order within each"
run_id="$(json_eval - 'd["runs"][0]["id"]')"
cp "$ITEST_DIR/last.out" "$ITEST_DIR/run.json"
jobs='{j["key"]: j["queue"] for j in d["runs"][0]["jobs"]}'
expect_json "[$jobs[k]['priority'] for k in ['high1', 'low2', 'first']]" \
  '["release", "nightly", "default"]' "each job's class"
expect_json "$jobs['high1']['waited']" '{}' "the first to start waited for nothing"
expect_json "$jobs['first']['seconds'] > 0 and list($jobs['first']['waited']) == ['gpus']" true \
  "the last to start waited, for the GPU only"
expect_json "all(0 < sum(q['waited'].values()) <= q['seconds'] for k, q in $jobs.items() if k != 'high1')" \
  true "the reasons' times add up to at most the wait"
expect_json "all(q['gpu_model'] == 'NVIDIA H200' for q in $jobs.values())" true \
  "the GPU model it waited for"
expect_json "sorted(($jobs[k]['queued_at'] + 1000 * $jobs[k]['seconds'], k) for k in $jobs)[-1][1]" \
  first "queued_at plus the wait is the start: the default class's job started last"

kiln report -C "$repo" "$run_id" --format json
expect_rc 0 "kiln report --format json"
expect_json '{j["key"]: j["queue"]["priority"] for j in d["jobs"]}' \
  '{"first": "default", "low1": "nightly", "high1": "release", "low2": "nightly", "high2": "release"}' \
  "the report's jobs carry their class"
expect_json '[j["queue"]["seconds"] > 0 for j in d["jobs"] if j["key"] == "first"]' '[true]' \
  "the report has the queue time"
kiln report -C "$repo" "$run_id"
expect_rc 0 "kiln report as text"
expect_match "$OUT" "queued [0-9.]+ s \(class default, gpus [0-9.]+ s\)" "the text report says why it waited"

kiln metrics -C "$repo" --simulate-gpus "$ITEST_DIR/gpus.json"
expect_rc 0 "kiln metrics"
expect_contains "$OUT" "# TYPE kiln_job_queue_seconds histogram" "the queue-time histogram"
expect_contains "$OUT" \
  'kiln_job_queue_seconds_count{labels="self-hosted,gpu,release",gpu_model="NVIDIA H200"} 4' \
  "counted by runs-on labels and GPU model: two runs of two release jobs"
expect_contains "$OUT" \
  'kiln_job_queue_seconds_bucket{labels="self-hosted,gpu",gpu_model="NVIDIA H200",le="+Inf"} 2' \
  "the +Inf bucket counts every job of the series"

# ---- bad input ----------------------------------------------------------------------------------
printf 'priority:\n  classes:\n    - name: release\n      branch: main\n      events: push\n' \
  >"$ITEST_DIR/bad.yml"
kiln run -C "$repo" --config "$ITEST_DIR/bad.yml" --simulate-gpus "$ITEST_DIR/gpus.json"
expect_rc 2 "an unknown key of a class is bad input"
expect_contains "$ERR" "bad.yml:5:7" "located"
expect_contains "$ERR" "priority.classes[0]: unknown key 'events'" "named"
printf 'priority:\n  classes:\n    - {name: pr, event: pull-request}\n' >"$ITEST_DIR/bad.yml"
kiln run -C "$repo" --config "$ITEST_DIR/bad.yml" --simulate-gpus "$ITEST_DIR/gpus.json"
expect_rc 2 "an unknown event is bad input"
expect_contains "$ERR" "bad.yml:3:25" "located"
expect_contains "$ERR" "unknown event 'pull-request'" "named"

itest_end
