#!/usr/bin/env bash
# A job a Slurm pool can never place, when kiln.yml describes the pool's nodes (pools[].nodes):
# `kiln validate --config` and `kiln run --config` say so at the job's runs-on label
# (FILE:LINE:COL, exit 2) before anything is submitted: more GPUs than any node has, a GRES type
# no node has, a gpu-model the pool maps to no GRES type, no node with the GPUs and the feature a
# gpu-arch: label maps to (pools[].features). Jobs the nodes can hold validate, and a
# pool without `nodes:` leaves the verdict to Slurm at submission (slurm_test.sh). No Slurm is
# needed: nothing reaches sbatch.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin slurm_validate

repo="$ITEST_DIR/repo"
make_repo "$repo"
cfg="$ITEST_DIR/kiln.yml"
cat >"$cfg" <<EOF
slurm:
  spool: $ITEST_DIR/spool
  bin_dir: $ITEST_DIR/no-slurm-here
  pools:
    - labels: [gpu]
      partition: gpu
      gpu-model: {h100: h100, a100: a100}
      features: {gpu-arch:sm_90: hopper}
      nodes:
        - gres: gpu:h100:1
          features: [hopper]
        - gres: gpu:h100:2,gpu:a100:2
EOF
write_workflow "$repo" fits.yml <<'EOF'
name: fits
on: push
jobs:
  two:
    runs-on: [gpu:2, gpu-model:h100]
    steps:
      - run: echo two
  four:
    runs-on: gpu:4
    steps:
      - run: echo "any type: 2 h100 and 2 a100 on one node"
  hopper:
    runs-on: [gpu:1, gpu-arch:sm_90]
    steps:
      - run: echo "the first kind of node has the feature"
EOF
write_workflow "$repo" never.yml <<'EOF'
name: never
on: push
jobs:
  five:
    runs-on: gpu:5
    steps:
      - run: echo five
  a100s:
    runs-on: [self-hosted, gpu:3, gpu-model:a100]
    steps:
      - run: echo a100s
  mi300:
    runs-on: [gpu:1, gpu-model:mi300]
    steps:
      - run: echo mi300
  hopper2:
    runs-on: [gpu:2, gpu-arch:sm_90]
    steps:
      - run: echo hopper2
EOF
commit_all "$repo" "workflows"

echo "-- jobs the described nodes can hold validate"
kiln validate --config "$cfg" "$repo/.github/workflows/fits.yml"
expect_rc 0 "gpu:2 of h100 and gpu:4 of any type fit a node"

echo "-- jobs no node can ever hold are errors at their runs-on label"
kiln validate --config "$cfg" "$repo/.github/workflows/never.yml"
expect_rc 2 "kiln validate: bad input"
expect_contains "$ERR" "never.yml:5:14: error: job 'five' asks for gpu:5, which Slurm can never place: no node of kiln.yml's Slurm pool ($cfg:5, partition gpu) has gpu:5: its nodes have gpu:h100:1 [hopper]; gpu:h100:2,gpu:a100:2" \
  "more GPUs than any node has, at the label, with the nodes kiln.yml describes"
expect_contains "$ERR" "never.yml:9:28: error: job 'a100s' asks for gpu:3 gpu-model:a100, which Slurm can never place" \
  "more GPUs of a type than any node has"
expect_contains "$ERR" "never.yml:13:15: error: job 'mi300' asks for gpu:1 gpu-model:mi300, which Slurm can never place: gpu-model:mi300 has no GRES type" \
  "a model the pool maps to no GRES type"
expect_contains "$ERR" "never.yml:17:15: error: job 'hopper2' asks for gpu:2 gpu-arch:sm_90, which Slurm can never place: no node of kiln.yml's Slurm pool ($cfg:5, partition gpu) has gpu:2 with features hopper: its nodes have gpu:h100:1 [hopper]; gpu:h100:2,gpu:a100:2" \
  "no node with both the GPUs and the feature"

echo "-- kiln run refuses the workflow before submitting anything"
kiln run -C "$repo" -W .github/workflows/never.yml --config "$cfg"
expect_rc 2 "kiln run: bad input"
expect_contains "$ERR" "never.yml:5:14: error: job 'five' asks for gpu:5, which Slurm can never place" \
  "the same error, from kiln run"
expect_eq "$(ls "$ITEST_DIR/spool" 2>/dev/null | wc -l)" 0 "no job reached the spool"

itest_end
