#!/usr/bin/env bash
# The reusable-workflow example (examples/reusable-cuda), as a user would try it: kiln validate
# follows the caller into the reusable workflow and the composite setup action; the plan shows
# the called jobs as "caller / job" with the GPU labels their inputs make; a broken call is
# reported at the caller's FILE:LINE:COL with exit code 2. Running it needs a GPU host and the
# container executor, so it is planned, not run.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin reusable

example="$KILN_SOURCE_DIR/examples/reusable-cuda"
[[ -f "$example/.github/workflows/ci.yml" ]] || itest_die "no example at $example"
repo="$ITEST_DIR/reusable-cuda"
mkdir -p "$repo"
cp -a "$example/." "$repo/"
make_repo "$repo"

kiln validate "$repo"
expect_rc 0 "kiln validate accepts the reusable-cuda example"
expect_contains "$OUT" "2 workflow files checked: 0 errors, 0 warnings" \
  "validate checked the caller and the reusable workflow"

# The runner label comes from an input: it is checked once the call's inputs are known.
kiln run -C "$repo" --dry-run --json
expect_rc 2 "without a mapping, the label the input gives is not one this host serves"
expect_match "$ERR" "_gpu-test\.yml:32:[0-9]+: error: runs-on label 'gpu-a100' is not a label this host serves" \
  "the unserved label is named at the reusable workflow's runs-on"
kiln run -C "$repo" --dry-run --json --label 'gpu-a100=gpu gpu-model:a100'
expect_rc 0 "kiln run --dry-run --json plans the reusable-cuda example"
expect_json '[j["id"] for j in d["workflows"][0]["jobs"]]' \
  '["gpu_test", "gpu_test / test", "distributed", "distributed / test"]' \
  "the plan lists each caller followed by its called job"
expect_json 'd["workflows"][0]["jobs"][0]["uses"]' './.github/workflows/_gpu-test.yml' \
  "gpu_test calls the reusable workflow"
expect_json 'd["workflows"][0]["jobs"][3]["instances"][0]["runs_on"]' \
  '["self-hosted", "gpu-a100", "gpu:2"]' "distributed's called job asks for two GPUs (input gpus: 2)"
expect_json 'd["workflows"][0]["jobs"][1]["container"]' 'pytorch-cuda:2.7-cuda11.8-ubuntu22.04' \
  "the called job runs in the pinned container (the input's default)"
expect_json 'd["workflows"][0]["jobs"][1]["steps"][1]' 'Run ./.github/actions/setup-gpu' \
  "the called job sets up the GPU with the composite action"
expect_json '[w["workflow"] for w in d["not_triggered"]]' '[".github/workflows/_gpu-test.yml"]' \
  "the reusable workflow is not triggered by itself"

# A call with a mistyped input and one the reusable workflow does not declare.
sed -i 's/      gpus: 2 .*/      gpus: two\n      gpu-count: 2/' "$repo/.github/workflows/ci.yml"
commit_all "$repo" "break the call"
kiln validate "$repo"
expect_rc 2 "kiln validate rejects a broken call"
expect_match "$ERR" "ci\.yml:26:13: error: input 'gpus' is a number: expected a number, got 'two'" \
  "a wrong input type is an error at the caller's line and column"
expect_match "$ERR" "ci\.yml:27:18: error: unknown input 'gpu-count' of reusable workflow" \
  "an unknown input is an error at the caller's line and column"
kiln run -C "$repo" --dry-run
expect_rc 2 "kiln run refuses the broken call with exit code 2"

# The composite action's input it does not declare is a warning, as GitHub only warns.
sed -i 's/          min-gpus: .*/          min-gpu: 1/' "$repo/.github/workflows/_gpu-test.yml"
cp "$example/.github/workflows/ci.yml" "$repo/.github/workflows/ci.yml"
commit_all "$repo" "mistype an action input"
kiln validate "$repo"
expect_rc 0 "an unexpected action input does not fail validation"
expect_match "$ERR" "_gpu-test\.yml:44:20: warning: unexpected input 'min-gpu' of action './\.github/actions/setup-gpu'" \
  "an unexpected action input is a warning at the step"
expect_contains "$OUT" "0 errors, 1 warning" "the warning is reported once, not once per caller"

itest_end
