#!/usr/bin/env bash
# The perf gate through the real binary: a job publishes benchmark results through
# $KILN_BENCHMARKS; kiln stores them per commit and fails the job whose results regressed
# against the default branch's history on the same testbed. A benchmark that is only noisy
# passes (reported as too noisy); a malformed result file is an error naming file and field.
# Also kiln bench ingest / compare / history / gate on the same store.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin perf_gate

repo="$ITEST_DIR/repo"
make_repo "$repo"
# The "benchmark": 10 repetitions around LEVEL (1% noise) and a noisy one around 50 (10%
# noise), from a fixed seed per commit, in the custom format.
cat >"$repo/bench.py" <<'EOF_PY'
import json, random, sys
level = float(open("level.txt").read())
random.seed(open("seed.txt").read())
rows = [
    {"name": "attention", "unit": "ms", "value": level,
     "samples": [level * (1 + random.gauss(0, 0.01)) for _ in range(10)]},
    {"name": "noisy-copy", "unit": "ms", "value": 50,
     "samples": [50 * (1 + random.gauss(0, 0.10)) for _ in range(10)]},
]
json.dump(rows, open(sys.argv[1], "w"))
EOF_PY
write_workflow "$repo" bench.yml <<'EOF_YML'
on: push
jobs:
  bench:
    runs-on: [self-hosted, linux]
    steps:
      - uses: actions/checkout@v4
      - name: Benchmark
        run: |
          python3 bench.py results.json
          echo results.json >> "$KILN_BENCHMARKS"
EOF_YML
run_commit() {  # LEVEL SEED MESSAGE
  echo "$1" >"$repo/level.txt"
  echo "$2" >"$repo/seed.txt"
  commit_all "$repo" "$3"
  kiln run -C "$repo" --json
}
job_log() { "$KILN" logs -C "$repo" "$1" bench 2>&1; }

# ---- two commits at the same level: no baseline, then unchanged --------------------------------
run_commit 100 first "baseline"
expect_rc 0 "the first run has nothing to compare with and passes"
log="$(job_log "$(json_eval - 'd["runs"][0]["id"]')")"
expect_contains "$log" "Benchmark results: 2 metric(s) from results.json (custom)" "the job's results were ingested"
expect_contains "$log" "no-baseline" "the first results have no baseline"

run_commit 100 second "same speed"
expect_rc 0 "an unchanged benchmark passes"
log="$(job_log "$(json_eval - 'd["runs"][0]["id"]')")"
expect_match "$log" "attention .* unchanged" "attention is unchanged"
expect_match "$log" "noisy-copy .* (too-noisy|unchanged)" "the noisy benchmark is reported, not failed"
expect_contains "$log" "0 regression(s)" "no regression"

# ---- 20% slower with repetitions: the job fails with the table in its log ----------------------
run_commit 120 third "20% slower"
expect_rc 1 "a 20% regression fails the run"
slow_run="$(json_eval - 'd["runs"][0]["id"]')"
expect_json 'd["runs"][0]["jobs"][0]["conclusion"]' failure "the benchmark job failed"
expect_json '"performance regression: attention +" in d["runs"][0]["jobs"][0]["reason"]' true "the reason names the benchmark"
expect_json 'd["runs"][0]["jobs"][0]["perf"]["rows"][0]["verdict"]' regression "kiln run --json has the gate's table"
expect_json 'd["runs"][0]["jobs"][0]["perf"]["passed"]' false "and says the gate failed"
log="$(job_log "$slow_run")"
expect_contains "$log" "BENCHMARK" "the table is in the log"
expect_match "$log" "attention .*\+2[0-9]\.[0-9]%.*p[<=]0\.0.*regression" "the row: change, p-value, verdict"
expect_match "$log" "noisy-copy .* (too-noisy|unchanged)" "the noisy benchmark still passes"

# ---- kiln bench on the same store ------------------------------------------------------------------
kiln bench history attention -C "$repo" --json
expect_rc 0 "kiln bench history succeeds"
expect_json 'len(d["series"][0]["points"])' 3 "three points in the series"
expect_json 'd["series"][0]["testbed"]' "gpus=none; labels=linux,self-hosted" "the testbed is the job's labels"
expect_json '[round(p["value"] / 1e6) for p in d["series"][0]["points"]]' "[100, 100, 120]" "the values per commit"
expect_json 'd["series"][0]["unit"]' ns "times in ms are kept in ns"

first="$(git -C "$repo" log --format=%H --grep=baseline -1)"
slow="$(git -C "$repo" log --format=%H -1)"
kiln bench compare -C "$repo" "commit:${first:0:10}" "commit:${slow:0:10}" --json
expect_rc 1 "kiln bench compare of two commits exits 1 on the regression"
expect_json '[r["verdict"] for r in d["rows"] if r["benchmark"] == "attention"]' '["regression"]' \
  "compare commit:A commit:B finds the regression"
kiln bench compare -C "$repo" "run:$slow_run" "commit:${slow:0:10}"
expect_rc 0 "a run compared with its own commit has no regression"

kiln bench gate -C "$repo" --run "$slow_run"
expect_rc 1 "kiln bench gate on the slow run fails"
expect_match "$OUT" "attention .*regression" "and shows the regression"

python3 - "$ITEST_DIR" <<'EOF_PY'
import json, sys
d = sys.argv[1]
json.dump([{"name": "k", "unit": "ms", "value": 10, "samples": [10, 10.1, 9.9, 10.05, 9.95]}], open(d + "/base.json", "w"))
json.dump([{"name": "k", "unit": "ms", "value": 12, "samples": [12, 12.1, 11.9, 12.05, 11.95]}], open(d + "/cur.json", "w"))
EOF_PY
kiln bench compare "$ITEST_DIR/base.json" "$ITEST_DIR/cur.json" --json
expect_rc 1 "kiln bench compare exits 1 on a regression"
expect_json 'd["rows"][0]["verdict"]' regression "compare: regression"
kiln bench compare "$ITEST_DIR/base.json" "$ITEST_DIR/cur.json" --threshold-for k=25
expect_rc 0 "a per-benchmark threshold of 25% lets 20% pass"

# ---- the run-history rule: every past run's repetitions, bimodal and run-to-run noise ------------
# Twelve past runs of 10 repetitions in two modes (30% of them 6% slower, each mode 1% wide), then
# a run 7% slower: against the history's 120 repetitions and the spread of its 12 run levels the
# step is a regression (at least the 5% threshold, as the verdict must show). Then a series whose runs are tight (0.25%) but whose levels wander by
# 2.5% run to run: a run 5% slower is within two of those standard deviations, too noisy to call.
python3 - "$ITEST_DIR" <<'EOF_PY'
import json, random, sys
d = sys.argv[1]
random.seed(6)
def bimodal(level):
    return [level * (1 + random.gauss(0, 0.01) + (0.06 if random.random() < 0.3 else 0)) for _ in range(10)]
def offset_run(level, offset):
    return [level * (1 + offset + random.gauss(0, 0.0025)) for _ in range(10)]
offsets = [0.0, 0.03, -0.025, 0.01, -0.035, 0.02, -0.01, 0.03, -0.02, 0.035, -0.03, 0.005]
for i in range(12):
    json.dump([{"name": "two-modes", "unit": "ms", "value": 0, "samples": bimodal(100)},
               {"name": "wandering", "unit": "ms", "value": 0, "samples": offset_run(100, offsets[i])}],
              open(f"{d}/hist{i}.json", "w"))
json.dump([{"name": "two-modes", "unit": "ms", "value": 0, "samples": bimodal(107)},
           {"name": "wandering", "unit": "ms", "value": 0, "samples": offset_run(105, 0.0)}],
          open(f"{d}/slower.json", "w"))
EOF_PY
for i in $(seq 0 11); do
  kiln bench ingest -C "$repo" --testbed lab --store "$ITEST_DIR/lab.db" "$ITEST_DIR/hist$i.json"
  expect_rc 0 "history run $i ingested"
done
kiln bench gate -C "$repo" --testbed lab --store "$ITEST_DIR/lab.db" "$ITEST_DIR/slower.json" --json
expect_rc 1 "a 7% step under bimodal noise fails the gate"
expect_json '[r["method"] for r in d["rows"]]' '["run-history", "run-history"]' "both decided on the run history"
expect_json '[r["verdict"] for r in d["rows"]]' '["regression", "too-noisy"]' \
  "bimodal: regression; run-to-run noise as large as the step: too noisy, not passed"
expect_json 'd["rows"][0]["history"]' 12 "twelve past runs"
expect_json 'd["rows"][0]["reason"]' "significant and ≥ threshold 5.0%" "the regression says why"
expect_json 'd["rows"][1]["reason"].startswith("too noisy: the interval ±") and d["rows"][1]["reason"].endswith("% is wider than the threshold 5.0%")' true \
  "too noisy says how wide the interval is"
expect_json 'd["rows"][1]["detectable_percent"] > 5' true "and the interval is in the JSON"

# ---- outside a git repository, ingest and gate agree on the branch ----------------------------
mkdir -p "$ITEST_DIR/plain"
for i in $(seq 0 11); do
  kiln bench ingest -C "$ITEST_DIR/plain" --testbed lab --store "$ITEST_DIR/plain.db" "$ITEST_DIR/hist$i.json"
done
expect_contains "$ERR" "is not a git repository: results stored as branch 'main'" \
  "ingest outside a git repository says which branch it stores the results as"
kiln bench gate -C "$ITEST_DIR/plain" --testbed lab --store "$ITEST_DIR/plain.db" "$ITEST_DIR/slower.json" --json
expect_json 'd["rows"][0]["history"]' 12 "the gate of that directory finds the twelve runs as its baseline"

# ---- kiln bench compare of two single runs, and with --history ---------------------------------
kiln bench compare "$ITEST_DIR/hist10.json" "$ITEST_DIR/slower.json"
expect_contains "$OUT" "note: run-to-run noise unknown: one run a side shows only the noise between its repetitions; 5 or more stored runs of the baseline would measure it (--history)" \
  "two single runs: the table says run-to-run noise is unknown and how many runs would tell"
kiln bench compare -C "$repo" --testbed lab --store "$ITEST_DIR/lab.db" --history "$ITEST_DIR/hist11.json" "$ITEST_DIR/slower.json" --json
expect_json '[r["method"] for r in d["rows"]]' '["run-history", "run-history"]' "--history judges on the stored runs"
expect_json '[r["verdict"] for r in d["rows"]]' '["regression", "too-noisy"]' "--history: the wandering runs are too noisy"
expect_json '[r["note"] for r in d["rows"]]' '[null, null]' "--history: no note about unknown noise"

# ---- a GPU job: the testbed names the granted GPU, and a new testbed has no baseline ------------
write_workflow "$repo" bench.yml <<'EOF_YML'
on: push
jobs:
  bench:
    runs-on: [self-hosted, gpu]
    steps:
      - uses: actions/checkout@v4
      - run: |
          python3 bench.py results.json
          echo results.json >> "$KILN_BENCHMARKS"
EOF_YML
echo fourth >"$repo/seed.txt"
commit_all "$repo" "on a GPU"
kiln run -C "$repo" --json --simulate-gpus "$KILN_SOURCE_DIR/tests/data/gpu/one-h200.json"
expect_rc 0 "the same 120 ms on a GPU testbed is not compared with the CPU one"
expect_json 'd["runs"][0]["jobs"][0]["perf"]["rows"][0]["verdict"]' no-baseline "a new testbed has no baseline"
kiln bench history attention -C "$repo" --json
expect_json '[s["testbed"] for s in d["series"] if "H200" in s["testbed"]]' \
  '["gpus=NVIDIA H200 x1; driver=simulated; labels=gpu,self-hosted"]' \
  "the testbed names the granted GPU's model and driver"

# ---- malformed result files ---------------------------------------------------------------------
echo '[{"name": "k", "unit": "ms", "value": "fast"}]' >"$ITEST_DIR/bad.json"
kiln bench ingest -C "$repo" "$ITEST_DIR/bad.json"
expect_rc 2 "ingesting a malformed file is bad input"
expect_contains "$ERR" "bad.json: error: [0].value: expected a number, got a string" "the error names file and field"

cat >"$repo/bench.py" <<'EOF_PY'
import sys
open(sys.argv[1], "w").write('{"context": {}, "benchmarks": [{"name": "BM_x", "real_time": [], "cpu_time": 1}]}')
EOF_PY
commit_all "$repo" "broken results"
kiln run -C "$repo" --json --simulate-gpus "$KILN_SOURCE_DIR/tests/data/gpu/one-h200.json"
expect_rc 1 "a job whose result file is malformed fails"
log="$(job_log "$(json_eval - 'd["runs"][0]["id"]')")"
expect_contains "$log" "results.json: error: benchmarks[0].real_time: expected a number, got an array" \
  "the job log names the file and the field"

# ---- issue 29: a number too large for a double in a job's result file ---------------------------
# It aborted kiln run (json::out_of_range). Now that job fails with a located message and the run
# goes on: the other job passes.
cat >"$repo/bench.py" <<'EOF_PY'
import sys
open(sys.argv[1], "w").write('{"context": 11111111111111111111111E11111111111, "benchmarks": []}')
EOF_PY
write_workflow "$repo" bench.yml <<'EOF_YML'
on: push
jobs:
  bench:
    runs-on: [self-hosted, linux]
    steps:
      - uses: actions/checkout@v4
      - run: |
          python3 bench.py results.json
          echo results.json >> "$KILN_BENCHMARKS"
      - run: echo after the results
  other:
    runs-on: [self-hosted, linux]
    steps:
      - run: echo the other job ran
EOF_YML
commit_all "$repo" "overflowing number"
kiln run -C "$repo" --json
expect_rc 1 "a job's overflowing result file fails the run, it does not abort kiln"
expect_json 'd["runs"][0]["conclusion"]' failure "the run finished (not interrupted)"
expect_json 'sorted((j["name"], j["conclusion"]) for j in d["runs"][0]["jobs"])' '[["bench", "failure"], ["other", "success"]]' \
  "the bad job failed, the other job passed"
log="$(job_log "$(json_eval - 'd["runs"][0]["id"]')")"
expect_match "$log" "results\.json:1:[0-9]+: error: context: not valid JSON: number overflow parsing '11111111111111111111111E11111111111'" \
  "the job log locates the number: file, line, column and field"
python3 "$repo/bench.py" "$ITEST_DIR/overflow.json"
kiln bench ingest -C "$repo" --store "$ITEST_DIR/bad.db" "$ITEST_DIR/overflow.json"
expect_rc 2 "kiln bench ingest of that file is bad input, not an internal error"
expect_match "$ERR" "overflow\.json:1:[0-9]+: error: context: not valid JSON: number overflow" "and names the file and the field"

# ---- result files that are not measurements: exit 2 with the file and the field ----------------
echo '{"context": {}, "benchmarks": []}' >"$ITEST_DIR/empty.json"
kiln bench ingest -C "$repo" --store "$ITEST_DIR/bad.db" "$ITEST_DIR/empty.json"
expect_rc 2 "a result file with no benchmark is refused"
expect_contains "$ERR" "empty.json: error: benchmarks: no benchmark results" "naming the file and the field"
echo '[{"name": "k", "unit": "ms", "value": 1, "samples": [1, 0, 1.1]}]' >"$ITEST_DIR/zero.json"
kiln bench ingest -C "$repo" --store "$ITEST_DIR/bad.db" "$ITEST_DIR/zero.json"
expect_rc 2 "a zero time is refused"
expect_contains "$ERR" "zero.json: error: [0].samples[1]: a time must be positive, got 0" "naming the sample"
printf 'BenchmarkK-8  100  NaN ns/op\n' >"$ITEST_DIR/nan.txt"
kiln bench gate -C "$repo" --store "$ITEST_DIR/bad.db" "$ITEST_DIR/nan.txt"
expect_rc 2 "NaN is refused"
expect_contains "$ERR" "nan.txt:1:20: error: benchmark value: expected a number, got 'NaN'" "at its line and column"

# ---- units across runs: ms then s converts; a unit that does not convert is refused ------------
units="$ITEST_DIR/units.db"
python3 - "$ITEST_DIR" <<'EOF_PY'
import json, random, sys
d = sys.argv[1]
random.seed(3)
for i in range(6):
    json.dump([{"name": "copy", "unit": "ms", "value": 0, "samples": [100 * (1 + random.gauss(0, 0.01)) for _ in range(10)]}],
              open(f"{d}/ms{i}.json", "w"))
json.dump([{"name": "copy", "unit": "s", "value": 0, "samples": [0.1 * (1 + random.gauss(0, 0.01)) for _ in range(10)]}],
          open(f"{d}/in-seconds.json", "w"))
json.dump([{"name": "other", "unit": "B", "value": 5}, {"name": "copy", "unit": "items/s", "value": 3}],
          open(f"{d}/rate.json", "w"))
EOF_PY
for i in 0 1 2 3 4 5; do
  kiln bench ingest -C "$repo" --testbed lab --store "$units" "$ITEST_DIR/ms$i.json"
done
kiln bench gate -C "$repo" --testbed lab --store "$units" "$ITEST_DIR/in-seconds.json" --json
expect_rc 0 "the same speed written in seconds passes"
expect_json 'd["rows"][0]["verdict"]' unchanged "ms then s: unchanged"
expect_json 'abs(d["rows"][0]["change_percent"]) < 3' true "not -99.9%"
kiln bench ingest -C "$repo" --testbed lab --store "$units" "$ITEST_DIR/rate.json"
expect_rc 2 "a unit that does not convert is refused at ingest"
expect_contains "$ERR" "rate.json: error: [1].unit: 'items/s' is not the unit 'ns' of the earlier results of 'copy' (value)" \
  "naming the file, the field and both units"

# ---- the H200 history of issue 18 through the binary ------------------------------------------
# 22 runs of one GPU benchmark (10 repetitions each) measured on an H200: runs 1-20 unchanged,
# 21 and 22 about 3% and 4% slower. Each judged against the runs before it: no regression at 5%.
h200="$ITEST_DIR/h200.db"
python3 - "$ITEST_DIR" "$KILN_SOURCE_DIR/tests/data/perf/h200-matmul-runs.json" <<'EOF_PY'
import json, sys
runs = json.load(open(sys.argv[2]))["runs"]
for i, samples in enumerate(runs):
    json.dump([{"name": "matmul_bf16", "unit": "ns", "value": 0, "samples": samples}],
              open(f"{sys.argv[1]}/h200-{i + 1}.json", "w"))
EOF_PY
regressions=""
for i in $(seq 1 22); do
  kiln bench gate -C "$repo" --testbed h200 --store "$h200" "$ITEST_DIR/h200-$i.json" --json
  if [[ "$RC" != 0 ]]; then regressions+=" $i"; fi
  [[ "$i" == 22 ]] && run22="$OUT"
  kiln bench ingest -C "$repo" --testbed h200 --store "$h200" "$ITEST_DIR/h200-$i.json"
done
check "runs 1-22 of the H200 history judged one by one: no regression at 5% (got:${regressions:- none})" test -z "$regressions"
OUT="$run22"
printf '%s' "$run22" >"$ITEST_DIR/last.out"
expect_json 'd["rows"][0]["verdict"] != "regression" and 3 < d["rows"][0]["change_percent"] < 5' true \
  "run 22 against runs 1-21: a +3-5% change, not a regression at 5%"

itest_end
