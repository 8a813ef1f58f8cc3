#!/usr/bin/env bash
# The life cycle of Slurm jobs on a real Slurm (slurm_lib.sh: kn1 with one fake GPU, kn2 with two),
# the nodes' GPUs simulated per node (kiln.yml slurm.simulate_gpus). Through `kiln run --config`:
# a killed agent is an infrastructure failure, run again once as attempt 2 (which succeeds), never
# a third time; a node that goes down under a job (NODE_FAIL) is an infrastructure failure; a GPU
# that fails its health check before the job (the job does not run) or after it drains its node
# with a "kiln: ..." reason that sinfo shows, said in the job's log; gpu-mem: labels become
# --constraint from kiln.yml's pool features.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/slurm_lib.sh"
itest_begin slurm_lifecycle
slurm_begin

repo="$ITEST_DIR/repo"
make_repo "$repo"
mkdir -p "$ITEST_DIR/gpus"
h100='"vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "arch": "sm_90"'
# kn1's GPU falls off the bus once $ITEST_DIR/kn1-broken exists; kn2's GPU 1 throws an Xid once a
# job's step creates $ITEST_DIR/kn2-xid.
cat >"$ITEST_DIR/gpus/kn1.json" <<EOF
{"gpus": [{$h100, "uuid": "GPU-kn1-0",
           "inject": {"when": "$ITEST_DIR/kn1-broken", "faults": ["Xid 79: GPU has fallen off the bus"]}}]}
EOF
cat >"$ITEST_DIR/gpus/kn2.json" <<EOF
{"gpus": [{$h100, "uuid": "GPU-kn2-0"},
          {$h100, "uuid": "GPU-kn2-1",
           "inject": {"when": "$ITEST_DIR/kn2-xid", "faults": ["Xid 48: double bit ECC error"]}}]}
EOF
pools="  simulate_gpus: $ITEST_DIR/gpus/{node}.json
  pools:
    - labels: [gpu, on-kn1]
      partition: kiln
      sbatch_args: [--nodelist=kn1]
    - labels: [gpu]
      partition: kiln
      features: {gpu-mem:80G: hbm80, gpu-mem:94G: hbm94}"
cfg="$ITEST_DIR/kiln.yml"           # the default retry: infra 1
printf 'slurm:\n  spool: %s\n%s\n' "$ITEST_DIR/spool" "$pools" >"$cfg"
cfg_once="$ITEST_DIR/kiln-once.yml" # no retry: a drained node would hold a retry pending
printf 'slurm:\n  spool: %s\n%s\nretry: {infra: 0, gpu-fault: 0}\n' "$ITEST_DIR/spool" "$pools" \
  >"$cfg_once"

for name in retried twice; do
  write_workflow "$repo" "$name.yml" <<EOF
name: $name
on: push
jobs:
  sleeper:
    runs-on: [gpu:1, on-kn1]
    env:
      ITEST_MARKER: slurm-$name-$$
    steps:
      - run: |
          echo "STARTED-$name-\$GITHUB_RUN_ATTEMPT"
          if [ "$name" = twice ] || [ "\$GITHUB_RUN_ATTEMPT" = 1 ]; then sleep 300; fi
          echo "DONE-$name-\$GITHUB_RUN_ATTEMPT"
EOF
done
write_workflow "$repo" nodefail.yml <<EOF
name: nodefail
on: push
jobs:
  sleeper:
    runs-on: gpu:2
    env:
      ITEST_MARKER: slurm-nodefail-$$
    steps:
      - run: |
          echo "STARTED-nodefail-\$GITHUB_RUN_ATTEMPT"
          sleep 300
EOF
write_workflow "$repo" before.yml <<'EOF'
name: before
on: push
jobs:
  one:
    runs-on: [gpu:1, on-kn1]
    steps:
      - run: echo "BEFORE-STEP-RAN"
EOF
write_workflow "$repo" after.yml <<EOF
name: after
on: push
jobs:
  two:
    runs-on: gpu:2
    steps:
      - run: |
          echo "UUIDS=\$KILN_GPU_UUIDS"
          touch "$ITEST_DIR/kn2-xid"
          echo "the kernel died with its GPU" >&2
          exit 1
EOF
write_workflow "$repo" features.yml <<'EOF'
name: features
on: push
jobs:
  big:
    runs-on: [gpu:1, gpu-mem:90G]
    steps:
      - run: echo "BIG-ON=$SLURMD_NODENAME"
  amd:
    runs-on: [gpu:1, gpu-arch:gfx942]
    steps:
      - run: echo "AMD-RAN"
EOF
commit_all "$repo" "workflows for the Slurm life cycle"

started() { grep -qs "STARTED-$1" "$ITEST_DIR"/spool/*/slurm-*.out; }
# kill_agent ATTEMPT_MARKER: kill -9 the one kiln agent running now.
kill_agent() {
  wait_until 60 started "$1" || itest_die "the Slurm job never started its step ($1)"
  local pid
  pid="$(pgrep -f "agent $ITEST_DIR/spool/" | head -1 || true)"
  [[ -n "$pid" ]] || itest_die "no kiln agent process ($1)"
  kill -9 "$pid"
}
# run_in_background NAME CONFIG: kiln run of NAME.yml, its pid in $kiln_pid.
run_in_background() {
  "$KILN" run -C "$repo" -W ".github/workflows/$1.yml" --config "$2" --json \
    >"$ITEST_DIR/$1.out" 2>"$ITEST_DIR/$1.err" </dev/null &
  kiln_pid=$!
  itest_track_pid "$kiln_pid"
}
node_reason() { sinfo -h -n "$1" -o '%t|%E'; }

echo "-- gpu-mem:, gpu-arch: and gpu-vendor: labels become --constraint from kiln.yml's features"
kiln run -C "$repo" -W .github/workflows/features.yml --config "$cfg_once" --json
expect_rc 1 "the run fails (one job's label has no feature)"
run_id="$(json_eval - 'd["runs"][0]["id"]')"
expect_json '[j["failure_class"] for j in d["runs"][0]["jobs"] if j["key"] == "amd"][0]' infra \
  "a label the pool maps to no feature fails the job before submission"
expect_json '"gpu-arch:gfx942 has no Slurm node feature" in [j["reason"] for j in d["runs"][0]["jobs"] if j["key"] == "amd"][0]' \
  true "saying which label and where to map it"
expect_contains "$ERR" "--constraint=hbm94" "gpu-mem:90G asks for the nodes with 94G GPUs"
expect_not_contains "$ERR" "AMD-RAN" "the unmapped job did not run"
kiln logs "$run_id" big -C "$repo"
expect_contains "$OUT" "BIG-ON=kn2" "and Slurm put it on kn2, the node with that feature"
check "no Slurm job is left" slurm_wait_empty

echo "-- a killed agent: an infrastructure failure, run again once, as attempt 2"
run_in_background retried "$cfg"
kill_agent retried-1
for token in $(tokens_with_marker "slurm-retried-$$"); do itest_track_token "$token"; done
wait_exit "$kiln_pid" 180 || itest_die "kiln run did not end within 180 s of the agent's death"
expect_eq "$WAIT_RC" 0 "kiln run exits 0: the second attempt succeeded"
cp "$ITEST_DIR/retried.out" "$ITEST_DIR/last.out"
expect_json 'd["runs"][0]["attempt"]' 2 "the run that counts is attempt 2"
expect_json 'd["runs"][0]["jobs"][0]["conclusion"]' success "attempt 2's job succeeded"
expect_json 'd["retried"][0]["jobs"][0]["failure_class"]' infra \
  "attempt 1's job is an infrastructure failure"
expect_json '"outcome (Slurm: FAILED;" in d["retried"][0]["jobs"][0]["reason"]' true \
  "its reason names Slurm's end state and the missing outcome"
expect_contains "$(cat "$ITEST_DIR/retried.err")" "--no-requeue" \
  "the job was submitted with --no-requeue: Slurm does not run it again by itself"
run_id="$(json_eval - 'd["runs"][0]["id"]')"
kiln logs "$run_id" sleeper -C "$repo"
expect_contains "$OUT" "DONE-retried-2" "attempt 2's step ran to its end"
check "no Slurm job is left" slurm_wait_empty

echo "-- killed again in the retry: no third attempt"
run_in_background twice "$cfg"
kill_agent twice-1
wait_until 120 started twice-2 || itest_die "no second attempt started"
kill_agent twice-2
for token in $(tokens_with_marker "slurm-twice-$$"); do itest_track_token "$token"; done
wait_exit "$kiln_pid" 180 || itest_die "kiln run did not end within 180 s of the second kill"
expect_eq "$WAIT_RC" 1 "kiln run exits 1"
cp "$ITEST_DIR/twice.out" "$ITEST_DIR/last.out"
expect_json 'd["runs"][0]["attempt"]' 2 "the last attempt is attempt 2"
expect_json 'd["runs"][0]["jobs"][0]["failure_class"]' infra "it failed as infrastructure too"
expect_json 'len(d["retried"])' 1 "one earlier attempt: the job was requeued once, not twice"
expect_not_contains "$(cat "$ITEST_DIR"/spool/*/slurm-*.out)" "STARTED-twice-3" \
  "no third attempt started"
check "no Slurm job is left" slurm_wait_empty

echo "-- a node that goes down under its job: NODE_FAIL, an infrastructure failure"
run_in_background nodefail "$cfg_once"
wait_until 60 started nodefail-1 || itest_die "the Slurm job never started its step"
for token in $(tokens_with_marker "slurm-nodefail-$$"); do itest_track_token "$token"; done
scontrol update NodeName=kn2 State=DOWN Reason="itest: kn2 lost"
wait_exit "$kiln_pid" 180 || itest_die "kiln run did not end within 180 s of the node going down"
expect_eq "$WAIT_RC" 1 "kiln run exits 1"
cp "$ITEST_DIR/nodefail.out" "$ITEST_DIR/last.out"
expect_json 'd["runs"][0]["jobs"][0]["failure_class"]' infra "the job is an infrastructure failure"
expect_json '"its node failed (NODE_FAIL)" in d["runs"][0]["jobs"][0]["reason"]' true \
  "the reason says the node failed"
# Its slurmd still answers: with ReturnToService=2 Slurm takes it back by itself.
node_idle() { [[ "$(sinfo -h -n kn2 -o %t)" == idle ]]; }
check "kn2 is back in service" wait_until 60 node_idle
check "no Slurm job is left" slurm_wait_empty

echo "-- a GPU that fails its check before the job: kn1 drained, the job not run"
touch "$ITEST_DIR/kn1-broken"
kiln run -C "$repo" -W .github/workflows/before.yml --config "$cfg_once" --json
expect_rc 1 "the run fails"
expect_json 'd["runs"][0]["jobs"][0]["failure_class"]' infra "the job is an infrastructure failure"
run_id="$(json_eval - 'd["runs"][0]["id"]')"
kiln logs "$run_id" one -C "$repo"
expect_contains "$OUT" "GPU 0 (GPU-kn1-0) failed its health check before the job" \
  "the job's log says which GPU failed"
expect_contains "$OUT" "Drained Slurm node kn1: kiln: GPU 0 (GPU-kn1-0)" \
  "the job's log says the node was drained"
expect_not_contains "$OUT" "BEFORE-STEP-RAN" "no step of the job ran"
reason="$(node_reason kn1)"
echo "  (sinfo kn1: $reason)"
expect_match "$reason" '^drain\|kiln: GPU 0 \(GPU-kn1-0\).*Xid 79' \
  "sinfo shows kn1 drained with kiln's reason"

echo "-- a GPU that faults during the job: kn2 drained after it"
kiln run -C "$repo" -W .github/workflows/after.yml --config "$cfg_once" --json
expect_rc 1 "the run fails"
# As for a host job: the fault explains the failure (a job that succeeded stays green).
expect_json 'd["runs"][0]["jobs"][0]["failure_class"]' gpu-fault \
  "the failed job is a gpu-fault, as a host job with an after-job fault is"
run_id="$(json_eval - 'd["runs"][0]["id"]')"
kiln logs "$run_id" two -C "$repo"
expect_contains "$OUT" "UUIDS=GPU-kn2-0,GPU-kn2-1" "the step saw the node's GPU UUIDs"
expect_contains "$OUT" "Drained Slurm node kn2: kiln: GPU 1 (GPU-kn2-1): Xid 48" \
  "the job's log says kn2 was drained for GPU 1's Xid"
reason="$(node_reason kn2)"
echo "  (sinfo kn2: $reason)"
expect_match "$reason" '^drain\|kiln: GPU 1 \(GPU-kn2-1\): Xid 48' \
  "sinfo shows kn2 drained with kiln's reason"

itest_end
