#!/usr/bin/env bash
# kiln.yml slurm: jobs whose runs-on has a `gpu` label go to a real Slurm (slurm_lib.sh: nodes
# kn1 with one fake GPU and kn2 with two) and run there through `kiln agent`, the others on this
# host. Through `kiln run --config`: a gpu:2 job lands on kn2 and its step sees both GPUs as Slurm
# set them; two gpu:1 jobs that run at the same time get different GPUs; a job Slurm cannot place
# fails with Slurm's reason; Ctrl-C scancels the job (squeue empty, no step left); a killed agent
# is an infrastructure failure; a misspelt key is an error at its line.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/slurm_lib.sh"
itest_begin slurm
slurm_begin

repo="$ITEST_DIR/repo"
make_repo "$repo"
cfg="$ITEST_DIR/kiln.yml"
cat >"$cfg" <<EOF
slurm:
  spool: $ITEST_DIR/spool
  pools:
    - labels: [gpu]
      partition: kiln
      gpu-model: {h100: h100}
retry: {infra: 0}   # a killed agent's job is not run again: this test looks at its failure
EOF

write_workflow "$repo" two.yml <<'EOF'
name: two
on: push
jobs:
  two:
    runs-on: [gpu:2, gpu-model:h100]
    steps:
      - run: echo "SAW node=$SLURMD_NODENAME cvd=$CUDA_VISIBLE_DEVICES kiln_gpus=$KILN_GPUS"
  here:
    runs-on: linux
    steps:
      - run: echo "HERE slurm=${SLURM_JOB_ID:-none}"
EOF
write_workflow "$repo" pair.yml <<EOF
name: pair
on: push
jobs:
$(for me in a b; do
  other=$([[ $me == a ]] && echo b || echo a)
  cat <<JOB
  $me:
    runs-on: gpu:1
    steps:
      - run: |
          echo "\$SLURMD_NODENAME/\$CUDA_VISIBLE_DEVICES" > "$ITEST_DIR/pair-$me.tmp"
          mv "$ITEST_DIR/pair-$me.tmp" "$ITEST_DIR/pair-$me"
          for i in \$(seq 1200); do [ -e "$ITEST_DIR/pair-$other" ] && break; sleep 0.1; done
          [ -e "$ITEST_DIR/pair-$other" ]
JOB
done)
EOF
write_workflow "$repo" refused.yml <<'EOF'
name: refused
on: push
jobs:
  four:
    runs-on: gpu:4
    steps:
      - run: echo "FOUR-RAN"
  a100:
    runs-on: [gpu:1, gpu-model:a100]
    steps:
      - run: echo "A100-RAN"
EOF
for name in cancel killed; do
  write_workflow "$repo" "$name.yml" <<EOF
name: $name
on: push
jobs:
  sleeper:
    runs-on: gpu:1
    env:
      ITEST_MARKER: slurm-$name-$$
    steps:
      - run: |
          echo "SLEEP-STARTING-$name"
          sleep 300
EOF
done
commit_all "$repo" "workflows for Slurm"

echo "-- a gpu:2 job on the node with two GPUs; a linux job on this host"
kiln run -C "$repo" -W .github/workflows/two.yml --config "$cfg" --json
expect_rc 0 "both jobs succeed"
run_id="$(json_eval - 'd["runs"][0]["id"]')"
kiln logs "$run_id" two -C "$repo"
expect_contains "$OUT" "SAW node=kn2 cvd=0,1 kiln_gpus=2" \
  "the gpu:2 step ran on kn2 and saw Slurm's two GPUs"
kiln logs "$run_id" here -C "$repo"
expect_contains "$OUT" "HERE slurm=none" "the linux job ran on this host, not in Slurm"
extra="$(sqlite3 "$repo/.kiln/kiln.db" "select extra from jobs where run_id = $run_id and key = 'two'")"
expect_match "$extra" '"node": ?"kn2"' "the store records the Slurm node of the job"
expect_match "$extra" '"job_id": ?"[0-9]+"' "the store records the Slurm job id"
check "no Slurm job is left" slurm_wait_empty

echo "-- two gpu:1 jobs at the same time do not share a GPU"
kiln run -C "$repo" -W .github/workflows/pair.yml --config "$cfg" --json --max-parallel 4
expect_rc 0 "both gpu:1 jobs ran at the same time (each saw the other start)"
a="$(cat "$ITEST_DIR/pair-a" 2>/dev/null || echo none-a)"
b="$(cat "$ITEST_DIR/pair-b" 2>/dev/null || echo none-b)"
echo "  (a: $a, b: $b)"
if [[ "$a" != "$b" && "$a" == kn*/* && "$b" == kn*/* ]]; then
  pass "different node/GPU pairs: $a and $b"
else
  fail "the two gpu:1 jobs shared a GPU or saw none: $a and $b"
fi

echo "-- jobs Slurm cannot place fail with the reason"
kiln run -C "$repo" -W .github/workflows/refused.yml --config "$cfg" --json
expect_rc 1 "the run fails"
expect_json '[j["failure_class"] for j in d["runs"][0]["jobs"] if j["key"] == "four"][0]' infra \
  "gpu:4 (no node has four) is an infrastructure failure"
expect_contains "$OUT" "Slurm refused the job: sbatch: error: Batch job submission failed: Requested node configuration is not available" \
  "with Slurm's reason"
expect_contains "$OUT" "gpu-model:a100 has no GRES type" "a model kiln.yml does not map is refused"
expect_not_contains "$OUT" "FOUR-RAN" "nothing of a refused job ran"

echo "-- Ctrl-C scancels the Slurm job"
"$KILN" run -C "$repo" -W .github/workflows/cancel.yml --config "$cfg" --json \
  >"$ITEST_DIR/cancel.out" 2>"$ITEST_DIR/cancel.err" </dev/null &
kiln_pid=$!
itest_track_pid "$kiln_pid"
started() { grep -qs "SLEEP-STARTING-$1" "$ITEST_DIR"/spool/*/slurm-*.out; }
wait_until 60 started cancel || itest_die "the Slurm job never started its step"
for token in $(tokens_with_marker "slurm-cancel-$$"); do itest_track_token "$token"; done
kill -INT "$kiln_pid"
wait_exit "$kiln_pid" 120 || itest_die "kiln run did not end within 120 s of SIGINT"
expect_eq "$WAIT_RC" 130 "kiln run exits 130 after SIGINT"
cp "$ITEST_DIR/cancel.out" "$ITEST_DIR/last.out"
expect_json 'd["runs"][0]["jobs"][0]["conclusion"]' cancelled "the Slurm job is cancelled"
check "squeue is empty after the cancel" slurm_wait_empty
expect_eq "$(tokens_with_marker "slurm-cancel-$$")" "" "no process of the cancelled step is left"

echo "-- a killed agent is an infrastructure failure"
"$KILN" run -C "$repo" -W .github/workflows/killed.yml --config "$cfg" --json \
  >"$ITEST_DIR/killed.out" 2>"$ITEST_DIR/killed.err" </dev/null &
kiln_pid=$!
itest_track_pid "$kiln_pid"
wait_until 60 started killed || itest_die "the Slurm job never started its step"
for token in $(tokens_with_marker "slurm-killed-$$"); do itest_track_token "$token"; done
agent_pid="$(pgrep -f "agent $ITEST_DIR/spool/" | head -1 || true)"
[[ -n "$agent_pid" ]] || itest_die "no kiln agent process"
kill -9 "$agent_pid"
wait_exit "$kiln_pid" 120 || itest_die "kiln run did not end within 120 s of the agent's death"
expect_eq "$WAIT_RC" 1 "kiln run exits 1"
cp "$ITEST_DIR/killed.out" "$ITEST_DIR/last.out"
expect_json 'd["runs"][0]["jobs"][0]["failure_class"]' infra "the job is an infrastructure failure"
expect_json '"ended without the agent" in d["runs"][0]["jobs"][0]["reason"]' true \
  "the reason says the agent died"
check "squeue is empty after the agent died" slurm_wait_empty

echo "-- a misspelt slurm: key is an error at its line"
cat >"$ITEST_DIR/bad.yml" <<EOF
slurm:
  spool: $ITEST_DIR/spool
  pools:
    - labels: [gpu]
      partitoin: kiln
EOF
kiln run -C "$repo" -W .github/workflows/two.yml --config "$ITEST_DIR/bad.yml"
expect_rc 2 "a bad kiln.yml is bad input"
expect_contains "$ERR" "bad.yml:5:7: error: slurm.pools[0]: unknown key 'partitoin'" \
  "the error names the file, line and column"

itest_end
