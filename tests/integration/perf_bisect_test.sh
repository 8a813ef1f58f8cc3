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

itest_end
