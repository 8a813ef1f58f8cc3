"""The masking corpus of tests/integration/security_masking_test.sh (issue 26).

    security_masking_corpus.py workflow FILE     writes the workflow (stdout: the case count)
    security_masking_corpus.py needles FILE      writes the texts that must appear nowhere
    security_masking_corpus.py scan NEEDLES NAME FILE...   prints "NAME: leak ..." per needle
                                                  found in a file (their text, not their bytes)

Every case puts one registered secret, raw or encoded as GitHub's runner masks it, somewhere the
engine stores or shows: a log line (stdout, stderr, ::group::, xtrace), a workflow command
(annotation message, title, file), a job or step name, a step or job output, $GITHUB_ENV,
the step summary, a JUnit test's suite, class, name, message, text or output, a benchmark's
name, an artifact's name.
"""
import base64
import json
import re
import sys
import urllib.parse

SECRETS = {
    "TOKEN_A": "s3cr3t-Alpha-9f8e7d6c5b4a",
    "TOKEN_B": 'p@ss w/rd+"q"&=~%x-Beta-77',
    "TOKEN_C": "mline-first-QQ7\nmline-second-RR8",
}
DYNAMIC = "dyn-42-m4sk-Gamma-value"  # masked at run time with ::add-mask::

# Encodings as a step prints them: bash producing "case-N: <form of $V>".
ENCODINGS = [
    ("raw", 'printf "%s" "$V"'),
    ("base64", 'printf "%s" "$V" | base64 -w0'),
    ("base64 after 1 byte", 'printf "x%s" "$V" | base64 -w0'),
    ("base64 after 2 bytes", 'printf "xy%s" "$V" | base64 -w0'),
    ("base64 of user:SECRET@host", 'printf "user:%s@host" "$V" | base64 -w0'),
    ("base64url", 'printf "%s" "$V" | base64 -w0 | tr "+/" "-_"'),
    ("JSON string", "python3 -c 'import json, os; print(json.dumps({\"v\": os.environ[\"V\"]}))'"),
    ("percent encoding", "python3 -c 'import os, urllib.parse as u; print(u.quote(os.environ[\"V\"], safe=\"\"))'"),
    ("percent encoding, lowercase",
     "python3 -c 'import os, re, urllib.parse as u; print(re.sub(\"%[0-9A-F]{2}\", lambda m: m.group(0).lower(), u.quote(os.environ[\"V\"], safe=\"\")))'"),
    ("form encoding", "python3 -c 'import os, urllib.parse as u; print(u.quote_plus(os.environ[\"V\"], safe=\"\"))'"),
]

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="suite-$A" tests="2" failures="1">
    <testcase classname="cls.$A" name="test_uses_$A" time="0.01">
      <failure message="expected $A got nothing">trace: $B64_B</failure>
      <system-out>json: $JSON_B</system-out>
    </testcase>
    <testcase classname="cls.plain" name="test_plain" time="0.01"/>
  </testsuite>
</testsuites>
"""

BENCHMARK = """{"context": {"library_build_type": "release"}, "benchmarks": [
  {"name": "BM_$A", "run_type": "iteration", "iterations": 1, "real_time": 10.0,
   "cpu_time": 10.0, "time_unit": "ns"},
  {"name": "BM_url_$URL_B", "run_type": "iteration", "iterations": 1, "real_time": 20.0,
   "cpu_time": 20.0, "time_unit": "ns"}]}
"""


def workflow():
    steps, cases = [], 0

    def case(name, run, **extra):
        nonlocal cases
        cases += 1
        step = {"name": name, "run": run}
        step.update(extra)
        steps.append(step)

    for variable in SECRETS:
        for label, command in ENCODINGS:
            case(f"{variable} {label}",
                 f'export V="${variable}"\necho "case-{cases + 1}: $({command})"')
    case("stderr", 'echo "case-%d: $TOKEN_A" >&2' % (cases + 1))
    case("xtrace", 'set -x\n: "case-%d $TOKEN_A"' % (cases + 1))
    case("env listing", 'env | grep "^TOKEN_A=" | sed "s/^/case-%d: /"' % (cases + 1))
    case("warning message", 'echo "::warning::case-%d $TOKEN_A"' % (cases + 1))
    case("error title", 'echo "::error title=t-$TOKEN_A::case-%d message"' % (cases + 1))
    case("notice file", 'echo "::notice file=f-$TOKEN_A.py,line=1::case-%d note"' % (cases + 1))
    case("group title", 'echo "::group::case-%d $TOKEN_A"\necho inside\necho "::endgroup::"'
         % (cases + 1))
    case("step summary", 'echo "## case-%d $TOKEN_A" >> "$GITHUB_STEP_SUMMARY"' % (cases + 1))
    case("step summary, base64",
         'echo "case-%d $(printf %%s "$TOKEN_B" | base64 -w0)" >> "$GITHUB_STEP_SUMMARY"'
         % (cases + 1))
    case("step output", 'echo "out=$TOKEN_A" >> "$GITHUB_OUTPUT"', id="o")
    case("job output", 'echo "job output set below (outputs.tok)"')
    case("GITHUB_ENV", 'echo "FROM_ENV=$TOKEN_A" >> "$GITHUB_ENV"')
    case("GITHUB_ENV read back", 'echo "case-%d: $FROM_ENV"' % (cases + 1))
    case("add-mask",
         f'v="dyn-$((6 * 7))-m4sk-Gamma-value"\necho "::add-mask::$v"\n'
         f'echo "case-{cases + 1}: $v $(printf %s "$v" | base64 -w0)"')
    case("add-mask in a later step",
         'echo "case-%d: $(printf x%%s "dyn-$((6 * 7))-m4sk-Gamma-value" | base64 -w0)"'
         % (cases + 1))
    junit = JUNIT.replace("$A", "$TOKEN_A")
    case("JUnit suite, class, name, message, text, output",
         'B64_B="$(printf %s "$TOKEN_B" | base64 -w0)"\n'
         "JSON_B=\"$(python3 -c 'import json, os; print(json.dumps(os.environ[\"TOKEN_B\"])[1:-1].replace(\"&\", \"&amp;\").replace(\"\\\"\", \"&quot;\"))')\"\n"
         "A_XML=\"$(printf %s \"$TOKEN_A\")\"\n"
         "cat > junit-secrets.xml <<EOF\n" + junit.replace("$TOKEN_A", "$A_XML") + "EOF")
    for _ in range(5):  # the five other JUnit places of the same file
        cases += 1
    case("benchmark names",
         "URL_B=\"$(python3 -c 'import os, urllib.parse as u; print(u.quote(os.environ[\"TOKEN_B\"], safe=\"\"))')\"\n"
         "cat > bench.json <<EOF\n" + BENCHMARK.replace("$A", "$TOKEN_A") + "EOF\n"
         'echo bench.json >> "$KILN_BENCHMARKS"')
    cases += 1  # two benchmark names
    steps.append({"name": "step named ${{ secrets.TOKEN_A }}", "run": "echo named step"})
    cases += 1
    steps.append({"name": "failing step ${{ secrets.TOKEN_A }}", "run": "exit 3",
                  "continue-on-error": True})
    cases += 1
    steps.append({"name": "artifact named with a secret", "uses": "actions/upload-artifact@v4",
                  "with": {"name": "art-${{ secrets.TOKEN_A }}", "path": "bench.json"},
                  "continue-on-error": True})
    cases += 1
    env = {name: "${{ secrets.%s }}" % name for name in SECRETS}
    doc = {"name": "masking", "on": "push", "jobs": {
        "leaky": {"name": "deploy ${{ secrets.TOKEN_A }}", "runs-on": "linux", "env": env,
                  "outputs": {"tok": "${{ steps.o.outputs.out }}"}, "steps": steps}}}
    cases += 1  # the job's name
    return json.dumps(doc, indent=1), cases


def base64_groups(prefix, value, suffix, alphabet_url):
    """The part of base64(prefix + value + suffix) that encodes bytes of `value` only."""
    data = (prefix + value + suffix).encode()
    encoded = base64.b64encode(data).decode()
    if alphabet_url:
        encoded = encoded.replace("+", "-").replace("/", "_")
    first = (len(prefix) + 2) // 3
    end = (len(prefix) + len(value)) // 3
    return encoded[4 * first:4 * end]


def needles():
    values = list(SECRETS.values()) + [DYNAMIC]
    values += [line for v in SECRETS.values() if "\n" in v for line in v.split("\n")]
    found = set()
    for value in values:
        found.add(value)
        for url in (False, True):
            for prefix, suffix in (("", ""), ("x", ""), ("xy", ""), ("user:", "@host")):
                found.add(base64_groups(prefix, value, suffix, url))
        found.add(json.dumps(value)[1:-1])
        upper = urllib.parse.quote(value, safe="")
        found.add(upper)
        found.add(re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), upper))
        found.add(urllib.parse.quote_plus(value, safe=""))
    return sorted(n for n in found if len(n) >= 8)


def scan(needles_file, name, files):
    wanted = json.load(open(needles_file))
    leaks = 0
    for path in files:
        text = open(path, "rb").read().decode("utf-8", "replace")
        # The same text as JSON and HTML would escape it, undone.
        variants = {text, text.replace("&quot;", '"').replace("&amp;", "&").replace("&#34;", '"'),
                    text.replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n")}
        for needle in wanted:
            if any(needle in v for v in variants):
                print(f"{name}: leak of {needle!r} in {path}")
                leaks += 1
    return leaks


def main():
    what = sys.argv[1]
    if what == "workflow":
        text, cases = workflow()
        open(sys.argv[2], "w").write(text)
        print(cases)
    elif what == "needles":
        json.dump(needles(), open(sys.argv[2], "w"), indent=1)
    elif what == "scan":
        sys.exit(1 if scan(sys.argv[2], sys.argv[3], sys.argv[4:]) else 0)


if __name__ == "__main__":
    main()
