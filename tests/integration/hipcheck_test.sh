#!/usr/bin/env bash
# Integration test for `kiln hipcheck`: the real binary on the fixtures and on throwaway trees.
# Env: KILN (the binary), KILN_SOURCE_DIR (the repository). Exits non-zero and says what failed.
set -u
KILN=${KILN:-build/kiln}
SRC=${KILN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FIXTURES="$SRC/tests/data/hipcheck"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-hipcheck-test.XXXXXX")
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# expect_rc WANT DESCRIPTION -- COMMAND...: runs COMMAND, stdout to $WORK/out, stderr to $WORK/err.
expect_rc() {
  local want=$1 what=$2
  shift 3
  "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    fail "$what: exit code $rc, expected $want"
    sed 's/^/  stdout: /' "$WORK/out" | head -20
    sed 's/^/  stderr: /' "$WORK/err" | head -20
  fi
}
expect_out() {  # expect_out FILE TEXT DESCRIPTION: TEXT (fixed string) is a line of FILE
  grep -qxF -- "$2" "$1" || { fail "$3: no line '$2' in $(basename "$1")"; sed 's/^/  | /' "$1" | head -40; }
}
expect_no() {  # expect_no FILE TEXT DESCRIPTION: TEXT (fixed string) is nowhere in FILE
  if grep -qF -- "$2" "$1"; then fail "$3: unexpected '$2'"; fi
}

[ -x "$KILN" ] || { echo "FAIL: no kiln binary at $KILN"; exit 1; }

# 1. The fixtures, text output, no failing.
cd "$FIXTURES" || exit 1
expect_rc 0 "fixtures with --fail-on none" -- "$KILN" hipcheck --fail-on none .
expect_out "$WORK/out" "runtime_api.cu:14:3: convertible: cudaMalloc (CUDA Runtime) -> hipMalloc [cuda-api]" "text finding"
expect_out "$WORK/out" "runtime_api.cu:18:3: unsupported: cudaDeviceFlushGPUDirectRDMAWrites (CUDA Runtime) has no HIP equivalent [cuda-api]" "unsupported finding"
expect_out "$WORK/out" "macros.cu:6:3: convertible: macro CUDA_CHECK uses CUDA (cudaError_t, cudaSuccess, cudaGetErrorString); defined at macros.h:6 [cuda-macro]" "macro expansion across files"
expect_out "$WORK/out" "warp_hazards.cu:16:28: hazard: lane index computed with & 31 assumes 32-lane warps (a thread index kept in lane): on 64-lane wavefronts lanes 32-63 get the indices of 0-31 (use % warpSize or __lane_id()) [lane-id-32]" "lane hazard"
expect_out "$WORK/out" "  runtime_api.cu: 11 references (8 convertible, 3 unsupported), 0 hazards, 22 lines of code" "per-file counts"
expect_no "$WORK/out" "precision.cpp" "precision fixture has no findings"
expect_out "$WORK/out" "more_libraries.cu:14:3: unsupported: nvmlInit (NVML) -> ROCm SMI (rsmi_*, rocm_smi/rocm_smi.h) or AMD SMI (amdsmi_*), a different API [cuda-api]" "NVML by its API"
expect_out "$WORK/out" "more_libraries.cu:19:3: unsupported: cudlaCreateDevice (cuDLA) has no HIP equivalent [cuda-api]" "no equivalent"
expect_out "$WORK/out" "more_libraries.cu:27:11: convertible: wmma::fill_fragment (WMMA, mma.h) -> rocwmma::fill_fragment (rocWMMA) [cuda-api]" "WMMA"
expect_out "$WORK/out" "more_libraries.cu:30:29: hazard: lane mask mask is a 32-bit variable passed to __shfl_xor_sync: lane masks are 64-bit on AMD wavefronts (declare it uint64_t) [warp-mask-32bit]" "mask in a 32-bit variable"
grep -q '^hipcheck: 11 files, [0-9]* lines of code: [0-9]* references ([0-9]* convertible, [0-9]* unsupported), [0-9]* hazards$' "$WORK/out" ||
  fail "summary line missing"
cp "$WORK/out" "$WORK/text-j1"

# 2. Default --fail-on is any; the order does not depend on the thread count.
expect_rc 0 "fixtures on 4 threads" -- "$KILN" hipcheck -j 4 --fail-on none .
cmp -s "$WORK/out" "$WORK/text-j1" || fail "output with -j 4 differs from the first run"
expect_rc 1 "fixtures with the default --fail-on (any)" -- "$KILN" hipcheck .
grep -q '^hipcheck: [0-9]* findings fail with --fail-on any: FAILED$' "$WORK/out" || fail "no FAILED line"

# 3. --fail-on ladder on small trees.
mkdir -p "$WORK/conv" "$WORK/haz" "$WORK/unsup"
printf 'void f(float* p) { cudaFree(p); }\n' >"$WORK/conv/a.cu"
printf '__device__ int lane() { return threadIdx.x & 31; }\n' >"$WORK/haz/a.cu"
printf 'void f() { cudaDeviceFlushGPUDirectRDMAWrites(t, s); }\n' >"$WORK/unsup/a.cu"
expect_rc 0 "convertible only, --fail-on unsupported" -- "$KILN" hipcheck --fail-on unsupported "$WORK/conv"
expect_rc 0 "convertible only, --fail-on hazard" -- "$KILN" hipcheck --fail-on hazard "$WORK/conv"
expect_rc 1 "convertible only, --fail-on any" -- "$KILN" hipcheck --fail-on any "$WORK/conv"
expect_rc 0 "hazard only, --fail-on unsupported" -- "$KILN" hipcheck --fail-on unsupported "$WORK/haz"
expect_rc 1 "hazard only, --fail-on hazard" -- "$KILN" hipcheck --fail-on hazard "$WORK/haz"
expect_rc 1 "unsupported, --fail-on unsupported" -- "$KILN" hipcheck --fail-on unsupported "$WORK/unsup"
expect_rc 1 "unsupported, --fail-on hazard" -- "$KILN" hipcheck --fail-on hazard "$WORK/unsup"
expect_rc 0 "unsupported, --fail-on none" -- "$KILN" hipcheck --fail-on none "$WORK/unsup"

# 4. Bad input: exit 2 with one line "PATH: error: ...".
expect_rc 2 "missing path" -- "$KILN" hipcheck "$WORK/does-not-exist"
[ "$(cat "$WORK/err")" = "$WORK/does-not-exist: error: no such file or directory" ] ||
  fail "missing path message: $(cat "$WORK/err")"
printf '{"findings": []}\n' >"$WORK/bad-baseline.json"
expect_rc 2 "bad baseline" -- "$KILN" hipcheck --baseline "$WORK/bad-baseline.json" "$WORK/conv"
[ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "^$WORK/bad-baseline.json: error: " "$WORK/err" ||
  fail "bad baseline message: $(cat "$WORK/err")"
printf 'not json' >"$WORK/bad-baseline.json"
expect_rc 2 "baseline that is not JSON" -- "$KILN" hipcheck --baseline "$WORK/bad-baseline.json" "$WORK/conv"
expect_rc 2 "missing baseline" -- "$KILN" hipcheck --baseline "$WORK/nope.json" "$WORK/conv"
grep -q "^$WORK/nope.json: error: " "$WORK/err" || fail "missing baseline message: $(cat "$WORK/err")"
expect_rc 2 "bad --fail-on" -- "$KILN" hipcheck --fail-on sometimes "$WORK/conv"
expect_rc 2 "bad --format" -- "$KILN" hipcheck --format xml "$WORK/conv"

# 5. Baseline workflow: accept what is there, then only new findings fail.
mkdir -p "$WORK/proj/src"
printf '#include <cuda_runtime.h>\nvoid f(float* p) {\n  cudaMalloc(&p, 4);\n  cudaFree(p);\n}\n' >"$WORK/proj/src/k.cu"
cd "$WORK/proj" || exit 1
expect_rc 0 "write a baseline" -- "$KILN" hipcheck --write-baseline hipcheck-baseline.json
[ -s hipcheck-baseline.json ] || fail "no baseline written"
grep -q "wrote a baseline of 3 findings to hipcheck-baseline.json" "$WORK/err" || fail "write-baseline message: $(cat "$WORK/err")"
expect_rc 0 "unchanged code against its baseline" -- "$KILN" hipcheck --baseline hipcheck-baseline.json
expect_out "$WORK/out" "hipcheck: 3 findings accepted by the baseline" "baseline count"
printf '// a new line above moves everything down\n' | cat - src/k.cu >src/k2 && mv src/k2 src/k.cu
expect_rc 0 "moved lines stay accepted" -- "$KILN" hipcheck --baseline hipcheck-baseline.json
printf 'void g() { cudaDeviceReset(); }\n' >>src/k.cu
expect_rc 1 "a new CUDA call fails" -- "$KILN" hipcheck --baseline hipcheck-baseline.json
expect_out "$WORK/out" "src/k.cu:7:12: convertible: cudaDeviceReset (CUDA Runtime) -> hipDeviceReset [cuda-api]" "new finding shown"
expect_no "$WORK/out" "cudaMalloc (CUDA Runtime)" "baselined finding hidden"

# 6. .gitignore is honoured; extensions are configurable; named files are always scanned.
mkdir -p "$WORK/tree/build" "$WORK/tree/src"
printf 'build/\n*.gen.cu\n' >"$WORK/tree/.gitignore"
printf 'cudaFree(p);\n' >"$WORK/tree/build/out.cu"
printf 'cudaFree(p);\n' >"$WORK/tree/src/x.gen.cu"
printf 'cudaFree(p);\n' >"$WORK/tree/src/kernel.cu"
printf 'cudaFree(p);\n' >"$WORK/tree/src/kernel.inl"
cd "$WORK/tree" || exit 1
expect_rc 1 "tree scan" -- "$KILN" hipcheck .
expect_out "$WORK/out" "src/kernel.cu:1:1: convertible: cudaFree (CUDA Runtime) -> hipFree [cuda-api]" "tree finding"
expect_no "$WORK/out" "build/out.cu" "ignored directory"
expect_no "$WORK/out" "x.gen.cu" "ignored pattern"
expect_no "$WORK/out" "kernel.inl" "extension not in the default list"
expect_rc 1 "--extensions" -- "$KILN" hipcheck --extensions inl .
expect_out "$WORK/out" "src/kernel.inl:1:1: convertible: cudaFree (CUDA Runtime) -> hipFree [cuda-api]" "--extensions inl"
expect_no "$WORK/out" "kernel.cu:" "--extensions replaces the list"
expect_rc 1 "named ignored file" -- "$KILN" hipcheck build/out.cu
expect_out "$WORK/out" "build/out.cu:1:1: convertible: cudaFree (CUDA Runtime) -> hipFree [cuda-api]" "named file"

# 7. JSON and SARIF.
cd "$FIXTURES" || exit 1
expect_rc 0 "json" -- "$KILN" hipcheck --format json --fail-on none .
cp "$WORK/out" "$WORK/report.json"
expect_rc 0 "sarif to a file" -- "$KILN" hipcheck --format sarif --fail-on none -o "$WORK/report.sarif" .
[ -s "$WORK/report.sarif" ] || fail "no SARIF file written"
if command -v python3 >/dev/null; then
  python3 - "$WORK/report.json" "$WORK/report.sarif" <<'PY' || fail "JSON/SARIF structure"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["tool"] == "kiln hipcheck" and report["schema_version"] == 1, report.keys()
s = report["summary"]
assert s["files"] == 11 and s["references"] == s["convertible"] + s["unsupported"], s
assert sum(f["references"] for f in report["files"]) == s["references"]
paths = [f["path"] for f in report["files"]]
assert paths == sorted(paths), paths
sarif = json.load(open(sys.argv[2]))
assert sarif["version"] == "2.1.0"
run = sarif["runs"][0]
results = run["results"]
assert len(results) == s["references"] + s["hazards"], len(results)
ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
assert all(r["ruleId"] in ids for r in results)
assert {r["level"] for r in results} == {"note", "warning", "error"}
PY
else
  echo "note: python3 not found, JSON and SARIF structure not checked"
fi

# 8. --rocm-version and kiln.yml hipcheck.rocm_version: support is judged for that release.
mkdir -p "$WORK/rocm"
printf '__device__ float f(float v) { return __shfl_xor_sync(0xffffffffffffffffull, v, 1); }\n' >"$WORK/rocm/k.cu"
expect_rc 0 "warp-sync intrinsic with the newest ROCm" -- "$KILN" hipcheck --fail-on unsupported "$WORK/rocm"
expect_out "$WORK/out" "hipcheck: support judged for ROCm 6.3 (the newest Kiln knows)" "default ROCm in the summary"
expect_rc 1 "warp-sync intrinsic with ROCm 6.1" -- "$KILN" hipcheck --fail-on unsupported --rocm-version 6.1 "$WORK/rocm"
expect_out "$WORK/out" "$WORK/rocm/k.cu:1:38: unsupported: __shfl_xor_sync (CUDA device functions) -> __shfl_xor_sync needs ROCm 6.2 [cuda-api]" "needs a newer ROCm"
expect_out "$WORK/out" "hipcheck: support judged for ROCm 6.1" "chosen ROCm in the summary"
expect_rc 2 "malformed --rocm-version" -- "$KILN" hipcheck --rocm-version 6 "$WORK/rocm"
[ "$(cat "$WORK/err")" = "kiln: error: --rocm-version: '6' is not a ROCm version (expected X.Y, e.g. 6.2)" ] ||
  fail "malformed --rocm-version message: $(cat "$WORK/err")"
expect_rc 2 "--rocm-version newer than known" -- "$KILN" hipcheck --rocm-version 9.0 "$WORK/rocm"
printf 'hipcheck:\n  rocm_version: "6.1"\n' >"$WORK/rocm/kiln.yml"
expect_rc 1 "kiln.yml hipcheck.rocm_version" -- "$KILN" hipcheck --fail-on unsupported --config "$WORK/rocm/kiln.yml" "$WORK/rocm"
expect_rc 0 "--rocm-version wins over kiln.yml" -- "$KILN" hipcheck --fail-on unsupported --config "$WORK/rocm/kiln.yml" --rocm-version 6.2 "$WORK/rocm"
printf 'hipcheck:\n  rocm_version: 6.x\n' >"$WORK/rocm/kiln.yml"
expect_rc 2 "bad kiln.yml hipcheck.rocm_version" -- "$KILN" hipcheck --config "$WORK/rocm/kiln.yml" "$WORK/rocm"
grep -q "^$WORK/rocm/kiln.yml:2:17: error: hipcheck.rocm_version: '6.x' is not a ROCm version" "$WORK/err" ||
  fail "bad kiln.yml message: $(cat "$WORK/err")"
printf 'hipcheck:\n  rocm: "6.1"\n' >"$WORK/rocm/kiln.yml"
expect_rc 2 "unknown kiln.yml hipcheck key" -- "$KILN" hipcheck --config "$WORK/rocm/kiln.yml" "$WORK/rocm"

# 9. Dual-platform code: CUDA-only branches are reported in JSON but never fail; the project's
#    own HIP macros count with --hip-macro or kiln.yml hipcheck.hip_macros.
mkdir -p "$WORK/dual"
cp "$FIXTURES/dual_platform.cu" "$WORK/dual/"
printf '#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#else\n#include <cuda_runtime.h>\n#endif\n' >"$WORK/dual/ported.cu"
expect_rc 0 "ported file passes the default gate" -- "$KILN" hipcheck "$WORK/dual/ported.cu"
expect_out "$WORK/out" "hipcheck: 1 finding in branches only a CUDA build compiles (dual-platform code), not listed and not failing" "guarded count"
expect_rc 1 "the project's own macro is unknown without --hip-macro" -- "$KILN" hipcheck --fail-on unsupported "$WORK/dual"
expect_out "$WORK/out" "$WORK/dual/dual_platform.cu:38:16: unsupported: cudaDeviceFlushGPUDirectRDMAWrites (CUDA Runtime) has no HIP equivalent [cuda-api]" "unguarded use"
expect_no "$WORK/out" "dual_platform.cu:29:" "guarded use not listed"
expect_rc 0 "--hip-macro" -- "$KILN" hipcheck --fail-on unsupported --hip-macro KILN_PROJECT_HIP "$WORK/dual"
printf 'hipcheck:\n  hip_macros: [KILN_PROJECT_HIP]\n' >"$WORK/dual/kiln.yml"
expect_rc 0 "kiln.yml hipcheck.hip_macros" -- "$KILN" hipcheck --fail-on unsupported --config "$WORK/dual/kiln.yml" "$WORK/dual"
expect_rc 0 "guarded findings in JSON" -- "$KILN" hipcheck --format json --fail-on none --hip-macro KILN_PROJECT_HIP "$WORK/dual/dual_platform.cu"
grep -q '"guard":"KILN_PROJECT_HIP"' "$WORK/out" || fail "JSON guard of the project's macro"
expect_rc 2 "bad --hip-macro" -- "$KILN" hipcheck --hip-macro "1X" "$WORK/dual"
printf 'hipcheck:\n  hip_macros: [ok, "not a name"]\n' >"$WORK/dual/kiln.yml"
expect_rc 2 "bad kiln.yml hipcheck.hip_macros" -- "$KILN" hipcheck --config "$WORK/dual/kiln.yml" "$WORK/dual"
grep -q "^$WORK/dual/kiln.yml:2:20: error: hipcheck.hip_macros: 'not a name' is not a macro name" "$WORK/err" ||
  fail "bad hip_macros message: $(cat "$WORK/err")"

# 10. Robust on any tree: FIFOs, devices and binary files are skipped with a warning, even when
#     named; a symlink loop says so; a line with many findings has the right columns.
mkdir -p "$WORK/odd"
printf 'cudaFree(p);\n' >"$WORK/odd/ok.cu"
mkfifo "$WORK/odd/pipe.cu"
printf 'cudaFree(p);\0binary\n' >"$WORK/odd/blob.cu"
ln -s loop1.cu "$WORK/odd/loop2.cu"
ln -s loop2.cu "$WORK/odd/loop1.cu"
expect_rc 1 "odd tree" -- timeout 20 "$KILN" hipcheck "$WORK/odd"
expect_out "$WORK/err" "$WORK/odd/pipe.cu: warning: a FIFO, not a regular file; skipped" "FIFO in a tree"
expect_out "$WORK/err" "$WORK/odd/blob.cu: warning: a binary file (it has NUL bytes); skipped" "binary file"
expect_out "$WORK/err" "$WORK/odd/loop1.cu: warning: a symlink loop; skipped" "symlink loop in a tree"
expect_out "$WORK/out" "$WORK/odd/ok.cu:1:1: convertible: cudaFree (CUDA Runtime) -> hipFree [cuda-api]" "the regular file is scanned"
expect_rc 0 "named FIFO" -- timeout 20 "$KILN" hipcheck "$WORK/odd/pipe.cu"
expect_out "$WORK/err" "$WORK/odd/pipe.cu: warning: a FIFO, not a regular file; skipped" "named FIFO warning"
expect_rc 0 "named device" -- timeout 20 "$KILN" hipcheck /dev/zero
expect_out "$WORK/err" "/dev/zero: warning: a character device, not a regular file; skipped" "named device warning"
expect_rc 0 "named symlink loop" -- timeout 20 "$KILN" hipcheck "$WORK/odd/loop1.cu"
expect_out "$WORK/err" "$WORK/odd/loop1.cu: warning: a symlink loop; skipped" "named symlink loop"
python3 -c "import sys; sys.stdout.write('  é ' + 'cudaFree(p); ' * 20000 + '\n')" >"$WORK/odd/long.cu"
expect_rc 0 "one long line" -- timeout 60 "$KILN" hipcheck --fail-on none --format json "$WORK/odd/long.cu"
python3 - "$WORK/out" <<'PY' || fail "columns on a long line"
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]["findings"]
assert len(f) == 20000, len(f)
assert [x["column"] for x in f[:3]] == [5, 18, 31], [x["column"] for x in f[:3]]
assert f[-1]["column"] == 5 + 13 * 19999, f[-1]["column"]
PY

# 11. Baselines from a subdirectory and with absolute paths; stale entries are listed.
mkdir -p "$WORK/base/src/sub"
printf 'void f(float* p) { cudaFree(p); }\n' >"$WORK/base/src/sub/a.cu"
printf 'void g() { cudaDeviceReset(); }\n' >"$WORK/base/src/b.cu"
cd "$WORK/base" || exit 1
expect_rc 0 "write a baseline at the root" -- "$KILN" hipcheck --write-baseline hipcheck-baseline.json src
grep -q '"path":"src/sub/a.cu"' hipcheck-baseline.json || fail "baseline paths relative to its directory"
cd "$WORK/base/src" || exit 1
expect_rc 0 "baseline used from a subdirectory" -- "$KILN" hipcheck --baseline ../hipcheck-baseline.json .
expect_out "$WORK/out" "hipcheck: 2 findings accepted by the baseline" "subdirectory matches"
expect_rc 0 "baseline with absolute paths" -- "$KILN" hipcheck --baseline "$WORK/base/hipcheck-baseline.json" "$WORK/base/src/sub/a.cu"
expect_out "$WORK/out" "hipcheck: 1 finding accepted by the baseline" "absolute paths match"
expect_no "$WORK/err" "stale" "a file not scanned is not stale"
printf 'void f(float* p) { hipFree(p); }\n' >"$WORK/base/src/sub/a.cu"
rm "$WORK/base/src/b.cu"
expect_rc 0 "stale entries" -- "$KILN" hipcheck --baseline ../hipcheck-baseline.json .
expect_out "$WORK/err" "../hipcheck-baseline.json: warning: stale baseline entry src/sub/a.cu:1 cuda-api cudaFree (accepts nothing now; --write-baseline drops it)" "stale entry of a changed file"
expect_out "$WORK/err" "../hipcheck-baseline.json: warning: stale baseline entry src/b.cu:1 cuda-api cudaDeviceReset (accepts nothing now; --write-baseline drops it)" "stale entry of a deleted file"

# 8. Bytes that are not UTF-8 or are control characters, in file names and in the code: the JSON
#    and SARIF still parse as strict UTF-8, with U+FFFD for each ill-formed part.
mkdir -p "$WORK/bytes"
printf 'cudaFree(p);\n' >"$WORK/bytes/latin1-"$'\xe9'".cu"
printf 'cudaFree(p);\n' >"$WORK/bytes/tab"$'\t'"here.cu"
printf '#define MY_\xff(x) cudaFree(x)\nMY_\xff(p);\n' >"$WORK/bytes/macro.cu"
expect_rc 0 "json with odd bytes" -- "$KILN" hipcheck --format json --fail-on none "$WORK/bytes"
cp "$WORK/out" "$WORK/odd.json"
expect_rc 0 "sarif with odd bytes" -- "$KILN" hipcheck --format sarif --fail-on none "$WORK/bytes"
cp "$WORK/out" "$WORK/odd.sarif"
if command -v python3 >/dev/null; then
  python3 - "$WORK/odd.json" "$WORK/odd.sarif" <<'PY' || fail "odd bytes in JSON/SARIF"
import json, sys
report = json.load(open(sys.argv[1], encoding="utf-8"))  # strict: raw invalid bytes would fail
paths = [f["path"].rsplit("/", 1)[1] for f in report["files"]]
assert paths == ["latin1-\ufffd.cu", "macro.cu", "tab\there.cu"], paths
names = [x["name"] for f in report["files"] for x in f["findings"]]
assert "MY_\ufffd" in names, names
sarif = json.load(open(sys.argv[2], encoding="utf-8"))
results = sarif["runs"][0]["results"]
uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[1]
        for r in results}
assert uris == {"latin1-%E9.cu", "macro.cu", "tab%09here.cu"}, uris
assert any("MY_\ufffd" in r["message"]["text"] for r in results)
PY
fi

if [ "$failures" -ne 0 ]; then
  echo "hipcheck integration: $failures check(s) failed (work directory kept: $WORK)"
  exit 1
fi
rm -rf "$WORK"
echo "hipcheck integration: all checks passed"
