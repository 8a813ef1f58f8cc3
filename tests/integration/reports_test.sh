#!/usr/bin/env bash
# Test results and reports through the real binary: a job's steps write JUnit XML (a default
# path and one listed in $KILN_TEST_RESULTS); kiln stores every test case, warns about a
# malformed file by name, marks a test that failed and then passed on a re-run of the same
# commit as flaky, and `kiln report` shows it all as text, JSON, JUnit and one self-contained
# HTML file. The HTML is rendered in headless Chromium: the DOM must hold the job and test
# names (escaped), and the page must make no network request (a recording proxy sees none,
# while a control page that does fetch is seen). A sampled GPU job's report draws a chart per GPU
# with a vertex per stored sample. The screenshots are kept in <build>/test-artifacts/report.png
# and report-gpu.png.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin reports

repo="$ITEST_DIR/repo"
make_repo "$repo"
attempts="$ITEST_DIR/attempts"
# A pytest-shaped result file: test_flaky fails on the first attempt only; the parametrized
# name carries markup that must come out escaped.
cat >"$repo/fake_pytest.py" <<'EOF_PY'
import os, sys
attempts = os.environ["ATTEMPTS"]
n = int(open(attempts).read()) if os.path.exists(attempts) else 0
open(attempts, "w").write(str(n + 1))
flaky = '<failure message="flaky: attempt 1 fails">Traceback: boom</failure>' if n == 0 else ""
os.makedirs("reports", exist_ok=True)
open("reports/junit.xml", "w").write(f"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.test_kernels" name="test_gemm" time="2.5"/>
<testcase classname="tests.test_kernels" name="test_flaky" time="0.5">{flaky}</testcase>
<testcase classname="tests.test_kernels" name="test_param[&lt;b&gt;x&lt;/b&gt;]" time="0.25"/>
<testcase classname="tests.test_kernels" name="test_broken" time="1.0"><failure message="assert 3 == 4">E assert 3 == 4</failure></testcase>
</testsuite></testsuites>""")
EOF_PY
write_workflow "$repo" ci.yml <<EOF_YML
name: CI
on: push
env:
  ATTEMPTS: $attempts
jobs:
  unit-tests:
    runs-on: [self-hosted, linux]
    steps:
      - uses: actions/checkout@v4
      - name: Run the tests
        run: python3 fake_pytest.py
      - name: A ctest-style result file at a listed path
        run: |
          mkdir -p out
          printf '<testsuite name="ctest"><testcase name="smoke" classname="smoke" time="0.1" status="run"/></testsuite>' > out/ctest.xml
          echo out/ctest.xml >> "\$KILN_TEST_RESULTS"
      - name: A malformed result file
        run: printf '<testsuite><testcase name="x">' > junit-broken.xml
  lint:
    runs-on: [self-hosted, linux]
    steps:
      - run: echo lint ok
EOF_YML
commit_all "$repo" "tests"

kiln run -C "$repo" --json
expect_rc 0 "the run passes (test failures do not change a job's conclusion)"
run1="$(json_eval - 'd["runs"][0]["id"]')"
log="$("$KILN" logs -C "$repo" "$run1" unit-tests 2>&1)"
expect_contains "$log" "Test results: 4 test(s) from reports/junit.xml" "the default path was read"
expect_contains "$log" "Test results: 1 test(s) from out/ctest.xml" "the listed path was read"
expect_match "$log" "test results: skipped .*junit-broken.xml: not valid XML" "a malformed file is a warning naming it"
expect_contains "$log" "Tests: 3 passed, 2 failed, 0 errors, 0 skipped" "the job's totals are in its log"

kiln report -C "$repo" "$run1" --format json
expect_rc 0 "kiln report --format json"
expect_json 'd["tests"]["total"]' 5 "five test cases stored"
expect_json 'd["tests"]["failed"]' 2 "two failed"
expect_json 'sorted(f["test"] for f in d["tests"]["failures"])' '["tests.test_kernels::test_broken", "tests.test_kernels::test_flaky"]' "the failures by name"
expect_json 'd["tests"]["slowest"][0]["test"]' "tests.test_kernels::test_gemm" "the slowest test first"
expect_json '[j["name"] for j in d["jobs"]]' '["unit-tests", "lint"]' "both jobs"
expect_json 'd["jobs"][0]["tests"]["total"]' 5 "the totals per job"
expect_json 'd["jobs"][1]["tests"]["total"]' 0 "a job without results has none"

# ---- the same commit again: test_flaky passes now, so it is flaky ----------------------------
kiln run -C "$repo" --json
expect_rc 0 "the re-run of the same commit passes"
run2="$(json_eval - 'd["runs"][0]["id"]')"
kiln report -C "$repo" "$run2" --format json
expect_json 'd["tests"]["flaky_tests"]' '[{"job": "unit-tests", "test": "tests.test_kernels::test_flaky"}]' "failed then passed on the same commit: flaky"
expect_json 'd["tests"]["failed"]' 1 "only test_broken fails now"

kiln report -C "$repo" "$run2"
expect_rc 0 "kiln report (text)"
expect_contains "$OUT" "unit-tests" "the text names the job"
expect_contains "$OUT" "tests.test_kernels::test_broken (failed): assert 3 == 4" "the text shows the failure and its message"
expect_contains "$OUT" "FLAKY" "the text lists flaky tests"

kiln report -C "$repo" "$run2" --format junit -o "$ITEST_DIR/kiln-junit.xml"
expect_rc 0 "kiln report --format junit -o FILE"
junit_check="$(python3 - "$ITEST_DIR/kiln-junit.xml" <<'EOF_PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [s.get("name") for s in root.findall("testsuite")]
steps = [c.get("name") for c in root.iter("testcase")]
print(root.tag, suites, "Run the tests" in steps, root.get("failures"))
EOF_PY
)"
expect_contains "$junit_check" "testsuites ['unit-tests', 'lint'] True 0" "the JUnit output: one suite per job, one case per step"

kiln report -C "$repo" 4242
expect_rc 2 "an unknown run is bad input"

# ---- HTML, rendered in headless Chromium ------------------------------------------------------
html="$ITEST_DIR/report.html"
kiln report -C "$repo" "$run2" --format html -o "$html"
expect_rc 0 "kiln report --format html -o FILE"
page="$(cat "$html")"
expect_not_contains "$page" "<b>x</b>" "markup in a test name is escaped"
expect_not_contains "$page" "://" "the page references no URL"

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$CHROMIUM" ]]; then
  itest_die "$CHROMIUM is missing: scripts/deps installs Debian's chromium for this test"
fi
artifacts="$(dirname "$KILN")/test-artifacts"
mkdir -p "$artifacts"
# A proxy that records every connection: with it as Chromium's proxy for every host (loopback
# included), any request the page makes shows up in its log.
proxy_log="$ITEST_DIR/proxy.log"
: >"$proxy_log"
python3 - "$ITEST_DIR/proxy.port" "$proxy_log" <<'EOF_PY' &
import socket, sys, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1], "w") as f:
    f.write(str(s.getsockname()[1]))
def serve(c):
    try:
        line = c.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
        with open(sys.argv[2], "a") as f:
            f.write(line + "\n")
        c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF_PY
proxy_pid=$!
itest_track_pid "$proxy_pid"
wait_until 10 test -s "$ITEST_DIR/proxy.port" || itest_die "the recording proxy did not start"
port="$(cat "$ITEST_DIR/proxy.port")"
chromium_run() {  # OUTPUT-FLAG FILE
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-default-apps --user-data-dir="$ITEST_DIR/chromium-profile" \
    --proxy-server="http://127.0.0.1:$port" \
    --window-size=1280,2000 --virtual-time-budget=2000 "$1" "file://$2" 2>>"$ITEST_DIR/chromium.err"
}
dom="$(chromium_run --dump-dom "$html")" || true
expect_contains "$dom" "unit-tests" "the rendered DOM holds the job name"
expect_contains "$dom" "tests.test_kernels::test_broken" "the rendered DOM holds a failed test"
expect_contains "$dom" "test_param[&lt;b&gt;x&lt;/b&gt;]" "the escaped name renders as text"
expect_contains "$dom" 'id="slowest-chart"' "the slowest-tests chart is drawn"
expect_not_contains "$dom" "<b>x</b>" "no element came from a test name"
rm -f "$artifacts/report.png"
(cd "$ITEST_DIR" && chromium_run --screenshot="$artifacts/report.png" "$html" >/dev/null) || true
check "a screenshot was taken ($artifacts/report.png)" test -s "$artifacts/report.png"

# ---- GPU charts from stored samples, rendered in Chromium -----------------------------------
# A GPU job on a simulated H200 sampled every 100 ms: the HTML report draws one chart per GPU
# whose utilization and memory lines have a vertex per stored sample (the JSON report's count).
gpu_repo="$ITEST_DIR/gpu-repo"
make_repo "$gpu_repo"
cat >"$ITEST_DIR/gpus.json" <<'EOF_JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771,
           "memory_used_mib": 2048,
           "telemetry": {"utilization_pct": 75, "memory_utilization_pct": 30, "temperature_c": 60,
                         "power_w": 450, "sm_clock_mhz": 1980}}]}
EOF_JSON
printf 'gpus:\n  telemetry:\n    interval: 100ms\n' >"$ITEST_DIR/kiln-gpu.yml"
write_workflow "$gpu_repo" ci.yml <<'EOF_YML'
on: push
jobs:
  train:
    runs-on: [self-hosted, gpu]
    steps:
      - run: sleep 1.5
EOF_YML
commit_all "$gpu_repo" "a GPU job"
KILN_CONFIG="$ITEST_DIR/kiln-gpu.yml" kiln run -C "$gpu_repo" --simulate-gpus "$ITEST_DIR/gpus.json" --json
expect_rc 0 "a sampled GPU job"
gpu_run="$(json_eval - 'd["runs"][0]["id"]')"
kiln report -C "$gpu_repo" "$gpu_run" --format json
expect_rc 0 "kiln report --format json of the GPU run"
expect_json 'd["jobs"][0]["gpu_sample_count"] >= 3' true "the job's samples are in the report"
expect_json 'd["jobs"][0]["gpu_sample_count"] == len(d["jobs"][0]["gpu_samples"][0]["points"])' true \
  "gpu_sample_count counts the points"
expect_json '{p["util"] for p in d["jobs"][0]["gpu_samples"][0]["points"]}' '{75.0}' \
  "each point has the sampler's utilization"
expect_json '{p["mem_mib"] for p in d["jobs"][0]["gpu_samples"][0]["points"]}' '{2048}' \
  "and its memory"
samples_count="$(json_eval - 'd["jobs"][0]["gpu_sample_count"]')"
gpu_html="$ITEST_DIR/gpu-report.html"
kiln report -C "$gpu_repo" "$gpu_run" --format html -o "$gpu_html"
expect_rc 0 "kiln report --format html of the GPU run"
expect_not_contains "$(cat "$gpu_html")" "://" "the GPU report references no URL"
chromium_run --dump-dom "$gpu_html" >"$ITEST_DIR/gpu-dom.html" || true
chart_check="$(python3 - "$ITEST_DIR/gpu-dom.html" <<'EOF_PY'
import sys
import html.parser
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.charts = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "gpu-chart" in (a.get("class") or ""):
            self.charts.append({"points": a.get("data-points"), "lines": {}})
        if tag == "polyline" and self.charts and a.get("class") in ("util-line", "mem-line"):
            self.charts[-1]["lines"][a["class"]] = len(a.get("points", "").split())
p = P()
p.feed(open(sys.argv[1]).read())
print(len(p.charts), [(c["points"], c["lines"].get("util-line"), c["lines"].get("mem-line")) for c in p.charts])
EOF_PY
)"
expect_contains "$chart_check" "1 [('$samples_count', $samples_count, $samples_count)]" \
  "Chromium's DOM has one GPU chart with a vertex per stored sample on both lines"
rm -f "$artifacts/report-gpu.png"
(cd "$ITEST_DIR" && chromium_run --screenshot="$artifacts/report-gpu.png" "$gpu_html" >/dev/null) || true
check "a screenshot of the GPU charts was taken ($artifacts/report-gpu.png)" test -s "$artifacts/report-gpu.png"
# Chromium itself calls Google's update and time services whatever the flags; those hosts are
# the browser's, never the report's (which names no URL at all).
page_requests="$(grep -vE '(^| |//)[a-z0-9.-]*(google\.com|googleapis\.com|gstatic\.com)(:[0-9]+)?[/ ]' "$proxy_log" || true)"
if [[ -z "$page_requests" ]]; then
  pass "the page made no network request"
else
  fail "the page made network requests:"
  sed 's/^/    | /' <<<"$page_requests" >&2
fi
# The control: a page that does fetch is seen by the proxy, so silence above means something.
printf '<html><head><link rel="stylesheet" href="http://kiln-report-control.test/s.css"></head><body><img src="http://kiln-report-control.test/x.png"></body></html>' >"$ITEST_DIR/control.html"
chromium_run --dump-dom "$ITEST_DIR/control.html" >/dev/null || true
expect_contains "$(cat "$proxy_log")" "kiln-report-control.test" "the proxy does see a page's request"

itest_end
