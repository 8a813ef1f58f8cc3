#!/usr/bin/env bash
# SARIF logs as a job's annotations, through the real binary: a step runs the real
# `kiln hipcheck --format sarif`, `github/codeql-action/upload-sarif` hands the log over, and
# every finding is a line of the job's log at its file and line (the check run's annotations
# are serve_checks_test.sh's); a log written the way clang's analyzer writes it (absolute
# file:// URIs, artifact indexes) lands on the right relative path; a broken log fails its step
# at the log's line and column, a missing path fails with GitHub's message, suppressed
# (baselined) findings are not shown.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin sarif

repo="$ITEST_DIR/repo"
make_repo "$repo"
mkdir -p "$repo/src"
printf '#include <cuda_runtime.h>\nvoid f(float** p) {\n  cudaMalloc(p, 4);\n  cudaDeviceFlushGPUDirectRDMAWrites(0, 0);\n}\n' \
  >"$repo/src/k.cu"
write_workflow "$repo" ci.yml <<EOF_YML
name: CI
on: push
jobs:
  scan:
    runs-on: linux
    steps:
      - uses: actions/checkout@v4
      - run: $KILN hipcheck --format sarif -o hipcheck.sarif --fail-on none src/
      - uses: github/codeql-action/upload-sarif@v3
        with: {sarif_file: hipcheck.sarif, category: hipcheck}
      - name: A log shaped as clang's analyzer writes it
        run: |
          mkdir -p analyzer
          cat >analyzer/clang.sarif <<EOF_SARIF
          {"version": "2.1.0", "runs": [{"artifacts": [{"location": {"index": 0, "uri": "file://\$GITHUB_WORKSPACE/src/k.cu"}}],
            "tool": {"driver": {"name": "clang", "rules": [{"id": "core.NullDereference", "defaultConfiguration": {"level": "warning"}}]}},
            "results": [{"ruleId": "core.NullDereference", "ruleIndex": 0, "message": {"text": "null pointer dereference"},
              "locations": [{"physicalLocation": {"artifactLocation": {"index": 0},
                "region": {"startLine": 3, "startColumn": 14, "endColumn": 14}}}]}]}]}
          EOF_SARIF
      - uses: github/codeql-action/upload-sarif@v3
        with: {sarif_file: analyzer}
  baselined:
    runs-on: linux
    steps:
      - uses: actions/checkout@v4
      - run: |
          $KILN hipcheck --write-baseline base.json src/ >/dev/null
          $KILN hipcheck --baseline base.json --format sarif -o all.sarif --fail-on none src/
      - uses: github/codeql-action/upload-sarif@v3
        with: {sarif_file: all.sarif}
  broken:
    runs-on: linux
    steps:
      - run: printf '{\n  "runs": [\n    {"results": [1,]}\n  ]\n}\n' >broken.sarif
      - uses: github/codeql-action/upload-sarif@v3
        with: {sarif_file: broken.sarif}
  missing:
    runs-on: linux
    steps:
      - uses: github/codeql-action/upload-sarif@v3
        with: {sarif_file: nowhere.sarif}
EOF_YML
commit_all "$repo" "a CUDA file and its scan"

kiln run -C "$repo" --job scan
expect_rc 0 "the scan job succeeds: findings do not fail it"
expect_contains "$OUT" "hipcheck.sarif: 3 results from kiln hipcheck" "the log says what was read"
expect_contains "$OUT" "notice: src/k.cu:3: " "the convertible cudaMalloc is a notice on line 3"
expect_contains "$OUT" "error: src/k.cu:4: " "the unsupported call is an error on line 4"
expect_contains "$OUT" "analyzer/clang.sarif: 1 result from clang" "a directory's logs are read"
expect_contains "$OUT" "warning: src/k.cu:3: null pointer dereference [core.NullDereference]" \
  "an absolute file:// URI through an artifact index lands on the workspace-relative path"

kiln run -C "$repo" --job baselined
expect_rc 0 "the baselined scan succeeds"
expect_contains "$OUT" "all.sarif: 3 results from kiln hipcheck, 3 suppressed" \
  "baselined findings are counted as suppressed"
expect_not_contains "$OUT" "src/k.cu:3:" "and not shown"

kiln run -C "$repo" --job broken
expect_rc 1 "a broken SARIF log fails the job"
expect_contains "$OUT" "broken.sarif:3:" "at the log's line"
expect_contains "$OUT" "not valid JSON" "saying what is wrong"

kiln run -C "$repo" --job missing
expect_rc 1 "a missing SARIF path fails the job"
expect_contains "$OUT" "Path does not exist: nowhere.sarif" "with GitHub's message"

itest_end
