#!/usr/bin/env bash
# The masking corpus (issue 26): a workflow of more than 50 cases, each putting a registered
# secret, raw or encoded (base64 at every alignment, base64url, JSON, percent and form
# encoding), somewhere kiln stores or shows it (security_masking_corpus.py lists them). No
# secret and no encoded form may appear in the terminal, `kiln run --json`, `kiln logs`, the
# database and every file under .kiln/ (contents and names), `kiln report` in every format, or
# the API of `kiln serve` on the same store. Each case is also seen to have run (its masked
# line, test, benchmark, name is there), so a case that silently did nothing cannot pass.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin security_masking
corpus() { python3 "$KILN_SOURCE_DIR/tests/integration/security_masking_corpus.py" "$@"; }

repo="$ITEST_DIR/repo"
make_repo "$repo"
mkdir -p "$repo/.github/workflows"
cases="$(corpus workflow "$repo/.github/workflows/masking.yml")"
commit_all "$repo" "the masking corpus"
check "the corpus has at least 50 cases ($cases)" test "$cases" -ge 50
corpus needles "$ITEST_DIR/needles.json"
printf 'TOKEN_C="mline-first-QQ7\\nmline-second-RR8"\n' >"$ITEST_DIR/secrets.env"
export TOKEN_A="s3cr3t-Alpha-9f8e7d6c5b4a" TOKEN_B='p@ss w/rd+"q"&=~%x-Beta-77'
secret_args=(--secret TOKEN_A --secret TOKEN_B --secret-file "$ITEST_DIR/secrets.env")
sinks="$ITEST_DIR/sinks"
mkdir -p "$sinks"
# A case is a leak whatever else passes: scan FILE... prints each leak and counts a failure.
scan() {
  local name="$1" leaks
  shift
  if leaks="$(corpus scan "$ITEST_DIR/needles.json" "$name" "$@")"; then
    pass "$name: no secret, raw or encoded"
  else
    fail "$name leaks:"$'\n'"$leaks"
  fi
}

kiln run -C "$repo" "${secret_args[@]}"
expect_rc 0 "the corpus run succeeds"
printf '%s\n%s\n' "$OUT" "$ERR" >"$sinks/terminal.txt"
run_id="$(sed -n 's/^kiln: .* (run \([0-9]*\))$/\1/p' "$sinks/terminal.txt" | head -1)"
[[ -n "$run_id" ]] || itest_die "no run id in the output"
scan "the terminal" "$sinks/terminal.txt"

kiln run -C "$repo" --json "${secret_args[@]}"
expect_rc 0 "the corpus run with --json succeeds"
cp "$ITEST_DIR/last.out" "$sinks/run.json"
cp "$ITEST_DIR/last.err" "$sinks/run-json.err"
scan "kiln run --json" "$sinks/run.json" "$sinks/run-json.err"
expect_json 'd["runs"][0]["jobs"][0]["name"]' "deploy ***" "the job's name is masked in --json"
expect_json 'd["runs"][0]["jobs"][0]["outputs"].get("tok", "***")' "***" \
  "the job output holding a secret is masked (or left out, as GitHub does)"
expect_json '[s["outputs"] for s in d["runs"][0]["jobs"][0]["steps"] if s.get("id") == "o"][0]["out"]' \
  "***" "the step output is masked"
expect_json '"step named ***" in [s["name"] for s in d["runs"][0]["jobs"][0]["steps"]]' true \
  "the step's name is masked"

kiln logs "$run_id" -C "$repo"
expect_rc 0 "kiln logs of the run"
cp "$ITEST_DIR/last.out" "$sinks/logs.txt"
scan "kiln logs" "$sinks/logs.txt"
# Every printing case ran and was masked: its line is there, with ***.
missing=""
for n in $(seq 1 34) 37 43 44 45; do
  line="$(grep -m1 -E "case-$n( |:)" "$sinks/logs.txt" || true)"
  [[ "$line" == *"***"* ]] || missing+=" $n"
done
check "every printing case printed its masked line (missing:${missing:- none})" test -z "$missing"
expect_contains "$(cat "$sinks/logs.txt")" "holds a secret" \
  "the artifact named with a secret is refused, and the log says why"

# The database, its WAL and every file under .kiln: contents and names.
python3 - "$repo/.kiln/kiln.db" "$sinks/db.txt" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
with open(sys.argv[2], "w") as out:
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        for row in db.execute(f'SELECT * FROM "{table}"'):
            for cell in row:
                text = cell.decode("utf-8", "replace") if isinstance(cell, bytes) else str(cell)
                out.write(f"{table}: {text}\n")
PY
scan "the database" "$sinks/db.txt"
find "$repo/.kiln" >"$sinks/kiln-paths.txt"
mapfile -t kiln_files < <(find "$repo/.kiln" -type f)
scan "the files under .kiln" "$sinks/kiln-paths.txt" "${kiln_files[@]}"
expect_contains "$(cat "$sinks/db.txt")" "test_uses_***" "the JUnit test is stored, its name masked"
expect_contains "$(cat "$sinks/db.txt")" "BM_***" "the benchmark is stored, its name masked"

for format in text json html junit; do
  kiln report "$run_id" -C "$repo" --format "$format"
  expect_rc 0 "kiln report --format $format"
  cp "$ITEST_DIR/last.out" "$sinks/report.$format"
  scan "kiln report --format $format" "$sinks/report.$format"
done
expect_contains "$(cat "$sinks/report.json")" "test_uses_***" "the report lists the masked test"

# The API of a server on the same store.
token="api-token-$RANDOM"
cat >"$ITEST_DIR/kiln.yml" <<EOF
serve:
  listen: 127.0.0.1:0
  store: $repo/.kiln/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  repositories:
    acme/widgets:
      clone_url: $repo
      webhook_secret: hook-secret
EOF
"$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
  >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
serve_pid=$!
itest_track_pid "$serve_pid"
wait_until 60 test -s "$ITEST_DIR/port" || itest_die "kiln serve did not start"
base="http://127.0.0.1:$(cat "$ITEST_DIR/port")"
api_files=()
for path in /api/runs "/api/runs/$run_id" "/api/runs/$run_id/report" "/api/runs/$run_id/logs" \
  "/api/runs/$run_id/events" "/api/runs/$run_id/artifacts" "/api/runs/$run_id/telemetry" \
  /api/gpus /metrics; do
  file="$sinks/api$(tr '/' '_' <<<"$path")"
  curl -sS --max-time 30 -H "Authorization: Bearer $token" "$base$path" >"$file" || true
  api_files+=("$file")
done
scan "the API" "${api_files[@]}"
expect_contains "$(cat "$sinks/api_api_runs_$run_id")" '"name":"deploy ***"' \
  "the API shows the job under its masked name"
kill -TERM "$serve_pid"
wait_exit "$serve_pid" 60 || true
itest_end
