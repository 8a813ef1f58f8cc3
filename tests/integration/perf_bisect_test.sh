#!/usr/bin/env bash
# kiln bench bisect through the real binary: a repository whose commits change a benchmark's
# speed (100 ms up to the 4th commit of 7, then 120 ms); bisecting the first and the last commit
# runs the job at commits between them and names the 4th, with the change and the runs.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin perf_bisect

repo="$ITEST_DIR/repo"
make_repo "$repo"
cat >"$repo/bench.py" <<'EOF_PY'
import json, random, sys
level = float(open("level.txt").read())
random.seed(open("level.txt").read() + str(random.random()))
json.dump([{"name": "attention", "unit": "ms", "value": 0,
            "samples": [level * (1 + random.gauss(0, 0.01)) for _ in range(10)]}], open(sys.argv[1], "w"))
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
  lint:
    runs-on: [self-hosted, linux]
    steps:
      - run: echo not part of the bisection
EOF_YML
for i in 1 2 3 4 5 6 7; do
  if ((i < 4)); then echo 100 >"$repo/level.txt"; else echo 120 >"$repo/level.txt"; fi
  echo "$i" >"$repo/change.txt"
  commit_all "$repo" "change $i"
done
good="$(git -C "$repo" log --format=%H --grep='^change 1$')"
bad="$(git -C "$repo" log --format=%H --grep='^change 7$')"
culprit="$(git -C "$repo" log --format=%H --grep='^change 4$')"

kiln bench bisect -C "$repo" "$good" "$bad" --job bench --store "$ITEST_DIR/bisect.db" --json
expect_rc 0 "kiln bench bisect succeeds"
expect_json 'd["first_bad"]' "$culprit" "it names the commit that made the benchmark slower"
expect_json 'd["subject"]' "change 4" "with its subject"
expect_json '18 < d["change_percent"] < 22' true "and the change (+20%)"
expect_json 'd["benchmark"]' attention "of the job's benchmark"
expect_json 'len(d["measured"]) <= 5 and all(len(m["runs"]) >= 1 for m in d["measured"])' true \
  "a bisection of 6 commits runs at most 5 of them, each with its runs"
expect_contains "$ERR" "kiln: bisect: running 'bench' at" "it says which commit it runs"

kiln bench bisect -C "$repo" "$good" "$bad" --job bench --store "$ITEST_DIR/bisect.db"
expect_contains "$OUT" "first bad commit: $culprit change 4" "the text names it too"

kiln bench bisect -C "$repo" "$good" "$culprit~1" --job bench --store "$ITEST_DIR/bisect.db"
expect_rc 1 "no step between two good commits: nothing to bisect"
expect_contains "$ERR" "below the threshold 5%, nothing to bisect" "and it says so"

kiln bench bisect -C "$repo" "$bad" "$good" --job bench --store "$ITEST_DIR/bisect.db"
expect_rc 2 "BAD before GOOD is bad input"
kiln bench bisect -C "$repo" "$good" nosuchcommit --job bench --store "$ITEST_DIR/bisect.db"
expect_rc 2 "an unknown commit is bad input"
expect_contains "$ERR" "'nosuchcommit' is not a commit" "naming it"
kiln bench bisect -C "$repo" "$good" "$bad" --job lint --store "$ITEST_DIR/bisect.db"
expect_rc 2 "a job without benchmark results is bad input"
expect_contains "$ERR" "job 'lint' at" "naming the job"

# On GPUs: every commit is measured on the bad run's GPU. The bad commit ran on a host whose only
# GPU was H200 "A"; the bisection runs on a host with an A100 as GPU 0 and H200 "A" as GPU 1, so an
# unpinned job would take the A100.
gpu_a="GPU-aaaaaaaa-0000-0000-0000-00000000000a"
cat >"$ITEST_DIR/bad-host.json" <<EOF_JSON
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771,
           "uuid": "$gpu_a"}]}
EOF_JSON
cat >"$ITEST_DIR/bisect-host.json" <<EOF_JSON
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA A100-SXM4-80GB", "arch": "sm_80", "memory_mib": 81920,
           "uuid": "GPU-bbbbbbbb-0000-0000-0000-00000000000b"},
          {"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771,
           "uuid": "$gpu_a"}]}
EOF_JSON
gpu_repo="$ITEST_DIR/gpu-repo"
make_repo "$gpu_repo"
cp "$repo/bench.py" "$gpu_repo/"
write_workflow "$gpu_repo" bench.yml <<'EOF_YML'
on: push
jobs:
  bench:
    runs-on: [self-hosted, linux, "gpu:1"]
    steps:
      - uses: actions/checkout@v4
      - run: |
          python3 bench.py results.json
          echo results.json >> "$KILN_BENCHMARKS"
EOF_YML
for i in 1 2 3 4; do
  if ((i < 3)); then echo 100 >"$gpu_repo/level.txt"; else echo 120 >"$gpu_repo/level.txt"; fi
  echo "$i" >"$gpu_repo/change.txt"
  commit_all "$gpu_repo" "gpu change $i"
done
gpu_good="$(git -C "$gpu_repo" log --format=%H --grep='^gpu change 1$')"
gpu_culprit="$(git -C "$gpu_repo" log --format=%H --grep='^gpu change 3$')"
gpu_bad="$(git -C "$gpu_repo" rev-parse HEAD)"
kiln run -C "$gpu_repo" --job bench --store "$ITEST_DIR/gpu.db" --simulate-gpus "$ITEST_DIR/bad-host.json"
expect_rc 0 "the bad commit's job runs on H200 A"
kiln bench bisect -C "$gpu_repo" "$gpu_good" "$gpu_bad" --job bench --store "$ITEST_DIR/gpu.db" \
  --simulate-gpus "$ITEST_DIR/bisect-host.json" --json
expect_rc 0 "the bisection on GPUs succeeds"
expect_json 'd["first_bad"]' "$gpu_culprit" "and names the commit that made it slower"
expect_contains "$ERR" "kiln: bisect: on the GPUs of run 1 (NVIDIA H200, driver simulated)" \
  "the bisection says it runs on the bad run's GPUs"
gpus_of_runs() {  # the UUIDs of the bench jobs of every run but the first
  python3 - "$ITEST_DIR/gpu.db" <<'EOF_PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT extra FROM jobs WHERE workflow_job_id = 'bench' AND run_id > 1 ORDER BY id")
print(sorted({g["uuid"] for (extra,) in rows for g in json.loads(extra).get("gpus", [])}))
EOF_PY
}
expect_eq() { if [[ "$1" == "$2" ]]; then pass "$3"; else fail "$3: got '$1', want '$2'"; fi; }
expect_eq "$(gpus_of_runs)" "['$gpu_a']" "every commit was measured on H200 A, never on the A100"
kiln bench bisect -C "$repo" "$good" "$bad" --job bench --store "$ITEST_DIR/bisect.db"
expect_contains "$ERR" "no stored run of 'bench' at $bad held GPUs" \
  "without a stored GPU run of BAD it says its runs are not pinned"
kiln run -C "$gpu_repo" --job bench --store "$ITEST_DIR/pin.db" --simulate-gpus "$ITEST_DIR/bisect-host.json" \
  --pin-gpu-model "NVIDIA H100 80GB HBM3"
expect_rc 1 "kiln run pinned to a model the host lacks fails the GPU job"
expect_contains "$OUT$ERR" "0 GPU(s) of the bisected testbed" "and says why"

itest_end
