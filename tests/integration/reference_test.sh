#!/usr/bin/env bash
# The repository's examples, as a user would try them: the two reference GPU pipelines
# (examples/reference/cuda and rocm) validate and plan as written, and the quickstart runs green.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin reference

examples="$KILN_SOURCE_DIR/examples"
[[ -d "$examples/reference/cuda/.github/workflows" ]] || itest_die "no examples under $examples"

# copy_example NAME DEST: the example's files (workflows included) as a new git repository.
copy_example() {
  mkdir -p "$2"
  cp -a "$examples/$1/." "$2/"
  rm -rf "$2/.kiln"
  make_repo "$2"
}

# The host configuration of docs/configuration.md, word for word: it maps the pipelines' custom
# runner labels (gpu-a100, roc-gpu-mi200); without it they are labels this host does not serve.
config="$ITEST_DIR/kiln.yml"
awk '/^```yaml$/ {inside = 1; next} /^```$/ && inside {exit} inside' \
  "$KILN_SOURCE_DIR/docs/configuration.md" >"$config"
grep -q "gpu-a100:" "$config" || itest_die "no kiln.yml example in docs/configuration.md"

# ---- CUDA reference pipeline ------------------------------------------------------------------
cuda="$ITEST_DIR/cuda"
copy_example reference/cuda "$cuda"
kiln validate "$cuda"
expect_rc 2 "without a kiln.yml, the CUDA pipeline's custom label is not one this host serves"
expect_match "$ERR" "cuda-ci\.yml:13:28: error: runs-on label 'gpu-a100' is not a label this host serves" \
  "the unserved label is named at its FILE:LINE:COL"
kiln validate "$cuda" --config "$config"
expect_rc 0 "kiln validate accepts the CUDA reference workflow with the docs' kiln.yml (gpu-a100 + gpu:2)"
# Line 39 holds an unquoted "with: " (not valid YAML as written): kiln reads it as a string and
# says so, as a warning.
expect_match "$ERR" "cuda-ci\.yml:39:[0-9]+: warning: " "validate warns about line 39's unquoted ': '"

kiln run -C "$cuda" --dry-run --json --config "$config"
expect_rc 0 "kiln run --dry-run --json plans the CUDA reference workflow"
expect_json 'len(d["workflows"])' 1 "a push to main triggers the CUDA workflow"
expect_json '[j["id"] for j in d["workflows"][0]["jobs"]]' '["gpu_test", "distributed"]' \
  "the CUDA plan has gpu_test and distributed"
expect_json 'd["workflows"][0]["jobs"][1]["needs"]' '["gpu_test"]' "distributed needs gpu_test"
expect_json 'd["workflows"][0]["jobs"][0]["container"]' 'pytorch-cuda:2.7-cuda11.8-ubuntu22.04' \
  "gpu_test runs in its pinned container"
expect_json 'd["workflows"][0]["jobs"][1]["runs_on"]' '["self-hosted", "gpu-a100", "gpu:2"]' \
  "distributed asks for two GPUs"
expect_json 'len(d["workflows"][0]["jobs"][0]["steps"])' 6 "gpu_test has its six steps"

kiln run -C "$cuda" --dry-run --json --event workflow_dispatch --config "$config"
expect_rc 0 "the CUDA workflow plans for workflow_dispatch"
expect_json 'd["workflows"][0]["name"]' "GPU tests" "workflow_dispatch triggers the CUDA workflow"

# ---- ROCm reference pipeline ------------------------------------------------------------------
rocm="$ITEST_DIR/rocm"
copy_example reference/rocm "$rocm"
kiln validate "$rocm" --config "$config"
expect_rc 0 "kiln validate accepts the ROCm reference workflow"

kiln run -C "$rocm" --dry-run --json --config "$config"
expect_rc 0 "kiln run --dry-run --json plans the ROCm reference workflow (push to main)"
expect_json '[j["id"] for j in d["workflows"][0]["jobs"]]' '["hip-verify-and-inference"]' \
  "the ROCm plan has hip-verify-and-inference"
expect_json 'd["workflows"][0]["jobs"][0]["container"]' 'rocm/pytorch:rocm6.2.3-ubuntu22.04' \
  "hip-verify-and-inference runs in its ROCm container"
expect_json 'd["workflows"][0]["jobs"][0]["runs_on"]' '["self-hosted", "roc-gpu-mi200"]' \
  "hip-verify-and-inference is routed by its custom label"

# A pull request to main that changes a file under src/ triggers the path-filtered pipeline.
git -C "$rocm" checkout -q -b port-kernel
echo "// a change to the port" >>"$rocm/src/vector_add.hip"
commit_all "$rocm" "change a kernel"
kiln run -C "$rocm" --dry-run --json --event pull_request --config "$config"
expect_rc 0 "kiln run --dry-run --json --event pull_request exits 0"
expect_json 'd["event"]["changed_files"]' '["src/vector_add.hip"]' \
  "the pull request's changed files come from the merge base with main"
expect_json '[j["id"] for j in d["workflows"][0]["jobs"]]' '["hip-verify-and-inference"]' \
  "a pull request changing src/ triggers hip-verify-and-inference"
expect_json 'd["workflows"][0]["jobs"][0]["container"]' 'rocm/pytorch:rocm6.2.3-ubuntu22.04' \
  "the pull request plan keeps the container image"

# A pull request that changes only the README does not match the paths filter.
git -C "$rocm" checkout -q main
git -C "$rocm" checkout -q -b docs-only
echo "more words" >>"$rocm/README.md"
commit_all "$rocm" "change the README"
kiln run -C "$rocm" --dry-run --json --event pull_request --config "$config"
expect_rc 0 "a pull request that triggers nothing still exits 0"
expect_json 'len(d["workflows"])' 0 "a README-only pull request does not trigger the GPU pipeline"
expect_json 'len(d["not_triggered"])' 1 "the plan says which workflow was not triggered"

# ---- quickstart -------------------------------------------------------------------------------
quick="$ITEST_DIR/quickstart"
copy_example quickstart "$quick"
kiln validate "$quick"
expect_rc 0 "kiln validate accepts the quickstart workflows"

kiln run -C "$quick" --json
expect_rc 0 "kiln run of the quickstart exits 0"
expect_json 'sorted(r["name"] for r in d["runs"])' '["docs", "quickstart"]' \
  "the first push runs both quickstart workflows"
expect_json 'sorted(j["key"] for r in d["runs"] for j in r["jobs"] if r["name"] == "quickstart")' \
  '["build", "report", "test (add, large)", "test (add, small)", "test (mul, large, true)", "test (mul, small)"]' \
  "the quickstart run has build, four test instances and report"
expect_json '[j["key"] for r in d["runs"] for j in r["jobs"] if j["conclusion"] != "success"]' '[]' \
  "every quickstart job succeeded"
expect_json '[r["conclusion"] for r in d["runs"]]' '["success", "success"]' \
  "both quickstart runs succeeded"
expect_contains "$ERR" "hello from kiln: calc" "the report job printed its greeting"
status="$(git -C "$quick" status --porcelain)"
if [[ -z "$status" ]]; then
  pass "the quickstart run leaves git status clean"
else
  fail "the quickstart run leaves git status dirty: $status"
fi

itest_end
