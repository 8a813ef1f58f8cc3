#!/usr/bin/env bash
# Secrets never reach the terminal, the JSON result, kiln logs or the database: values from
# --secret K=V, --secret NAME (the environment), --secret-file (multi-line too) and values
# masked at run time with ::add-mask::.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin secrets

repo="$ITEST_DIR/repo"
make_repo "$repo"
# The ::add-mask:: value is computed by the step (dyn-42-m4sk-value), so it appears nowhere in
# the workflow file: finding it in the database can only be a leak.
write_workflow "$repo" ci.yml <<'EOF'
name: secrets
on: push
jobs:
  leak:
    runs-on: linux
    env:
      FROM_SECRET: ${{ secrets.TOKEN }}
    outputs:
      token: ${{ steps.out.outputs.tok }}
      dynamic: ${{ steps.dyn.outputs.v }}
    steps:
      - name: Echo the secrets
        env:
          MULTI: ${{ secrets.MULTI }}
          FROM_ENV: ${{ secrets.ENV_SECRET }}
        run: |
          echo "token: ${{ secrets.TOKEN }}"
          echo "env token: $FROM_SECRET"
          echo "stderr token: $FROM_SECRET" >&2
          echo "multi: $MULTI"
          printf 'multi line: %s\n' "$MULTI"
          echo "from env: $FROM_ENV"
          echo "file token: ${{ secrets.FILE_TOKEN }}"
      - name: Secret as a step output
        id: out
        run: echo "tok=$FROM_SECRET" >> "$GITHUB_OUTPUT"
      - name: Mask a value at run time
        id: dyn
        run: |
          value="dyn-$((6 * 7))-m4sk-value"
          echo "::add-mask::$value"
          echo "dynamic: $value"
          echo "v=$value" >> "$GITHUB_OUTPUT"
      - name: A later step prints the run-time value
        run: |
          echo "later: dyn-$((6 * 7))-m4sk-value"
      - name: Warning with a secret
        run: |
          echo "::warning::careful with ${{ secrets.TOKEN }}"
      # A line longer than 1 MiB reaches the log in pieces; the first cut goes through a run of
      # 22 Q's around a secret of 12 Q's. The run is printed by the step, not written here.
      - name: A long line with a run of a repeated-byte secret
        env:
          REPEATED: ${{ secrets.REPEATED }}
        run: |
          q="$(printf 'Q%.0s' $(seq 22))"
          x="$(head -c 1048554 /dev/zero | tr '\0' x)"
          printf '%s%s%s\n' "$x" "$q" "$(head -c 20000 /dev/zero | tr '\0' y)"
EOF
commit_all "$repo" "a workflow that prints secrets"

cat >"$ITEST_DIR/secrets.env" <<'EOF'
# secrets for the test
MULTI="mline-one-AAA\nmline-two-BBB"
export FILE_TOKEN='f1le-s3cr3t-value'
EOF
export ENV_SECRET="env-s3cr3t-value"

secret_values=(s3cr3t-value-XYZ mline-one-AAA mline-two-BBB env-s3cr3t-value f1le-s3cr3t-value
  dyn-42-m4sk-value)

repeated="$(printf 'Q%.0s' $(seq 12))"
kiln run -C "$repo" --secret TOKEN=s3cr3t-value-XYZ --secret-file "$ITEST_DIR/secrets.env" \
  --secret ENV_SECRET --secret "REPEATED=$repeated"
expect_rc 0 "the run with secrets succeeds"
[[ "$RC" == 0 ]] || itest_die "the checks below need a successful run"
terminal="$OUT
$ERR"
# The steps did print where the secrets were: masked.
expect_contains "$terminal" "token: ***" "the secret from --secret is printed as ***"
expect_contains "$terminal" "env token: ***" "the secret through job env is printed as ***"
expect_contains "$terminal" "stderr token: ***" "the secret on stderr is printed as ***"
expect_contains "$terminal" "multi: ***" "the first line of the multi-line secret is masked"
expect_contains "$terminal" "multi line: ***" "each line of the multi-line secret is masked"
expect_contains "$terminal" "from env: ***" "the secret from the environment (--secret NAME) is masked"
expect_contains "$terminal" "file token: ***" "the quoted secret from --secret-file is masked"
expect_contains "$terminal" "dynamic: ***" "the ::add-mask:: value is masked in its step"
expect_contains "$terminal" "later: ***" "the ::add-mask:: value is masked in later steps"
expect_not_contains "$terminal" "::add-mask::" "the add-mask command itself is not printed"
# The long line in pieces: the first ends in the mask, the second begins after the run.
expect_contains "$terminal" "xx***" "the run of Q's cut between two pieces of a long line is masked"
expect_not_contains "$terminal" "QQQQ" "no part of the run of Q's shows on either side of the cut"
for value in "${secret_values[@]}"; do
  expect_not_contains "$terminal" "$value" "the terminal output never shows $value"
done
run_id="$(sed -n 's/^kiln: .* (run \([0-9]*\))$/\1/p' <<<"$terminal" | head -1)"

# The same run again with --json: the result (with job and step outputs) is masked too.
kiln run -C "$repo" --json --secret TOKEN=s3cr3t-value-XYZ --secret-file "$ITEST_DIR/secrets.env" \
  --secret ENV_SECRET --secret "REPEATED=$repeated"
expect_rc 0 "the run with secrets and --json succeeds"
for value in "${secret_values[@]}"; do
  expect_not_contains "$ERR" "$value" "kiln run --json keeps $value out of the log on stderr"
done

# Step outputs set through $GITHUB_OUTPUT are reported unmasked (a known bug, see below); any
# other place in the JSON is a new leak.
#
# json_places FILE VALUE: where in the JSON document VALUE occurs inside a string, as sorted
# paths; every runs[].jobs[].steps[].outputs place is shown as "steps[].outputs".
json_places() {
  python3 - "$1" "$2" <<'PY'
import json, sys
def walk(node, path):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, path + [str(key)])
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, path + [str(index)])
    elif isinstance(node, str) and sys.argv[2] in node:
        yield path
places = set()
for path in walk(json.load(open(sys.argv[1])), []):
    in_step_outputs = len(path) >= 2 and path[-2] == "outputs" and "steps" in path
    places.add("steps[].outputs" if in_step_outputs else "/".join(path))
print(" ".join(sorted(places)))
PY
}
for value in "${secret_values[@]}"; do
  places="$(json_places "$ITEST_DIR/last.out" "$value")"
  if [[ -z "$places" ]]; then
    pass "kiln run --json never shows $value"
  else
    fail "kiln run --json shows $value at: $places"
  fi
done
expect_json 'd["runs"][0]["jobs"][0]["outputs"].get("token", "***")' '***' \
  "a job output holding a secret is masked (or left out)"

# ---- kiln logs ------------------------------------------------------------------------------
kiln logs "$run_id" -C "$repo"
expect_rc 0 "kiln logs of the run exits 0"
expect_contains "$OUT" "token: ***" "kiln logs shows the masked line"
expect_contains "$OUT" "later: ***" "kiln logs shows the run-time mask"
expect_contains "$OUT" "xx***" "kiln logs shows the long line's run of Q's masked"
expect_not_contains "$OUT" "QQQQ" "kiln logs shows no part of the run of Q's"
for value in "${secret_values[@]}"; do
  expect_not_contains "$OUT" "$value" "kiln logs never shows $value"
done

# ---- the database, its WAL and everything else under .kiln/ -----------------------------------
[[ -f "$repo/.kiln/kiln.db" ]] || itest_die "no database at $repo/.kiln/kiln.db"
echo "  (files under .kiln: $(cd "$repo/.kiln" && find . -type f | tr '\n' ' '))"
# db_places VALUE: table.column of every database cell that contains VALUE (Python's sqlite3, so
# no sqlite3 program is needed), one per line.
db_places() {
  python3 - "$repo/.kiln/kiln.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
places = set()
for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
    cursor = db.execute(f'SELECT * FROM "{table}"')
    columns = [c[0] for c in cursor.description]
    for row in cursor:
        for column, cell in zip(columns, row):
            text = cell.decode("utf-8", "replace") if isinstance(cell, bytes) else str(cell)
            if sys.argv[2] in text:
                places.add(f"{table}.{column}")
print("\n".join(sorted(places)))
PY
}
logs_in_db="$(db_places 'token: ***')"
expect_contains "$logs_in_db" "log" "the database holds the masked log line (so the search below looks in the right place)"
for value in "${secret_values[@]}" QQQQ; do
  places="$(db_places "$value")"
  files="$(grep -rlaF -- "$value" "$repo/.kiln" || true)"
  if [[ -z "$places" && -z "$files" ]]; then
    pass "no database cell and no file under .kiln/ (db, -wal, -shm, work dirs) has $value"
  else
    fail "$value was written to the database (${places//$'\n'/, }) or to files: $files"
  fi
done

# What can hold a secret is readable by its owner only: the store (and its -wal, -shm) and the
# step script, which holds the interpolated `${{ secrets.X }}` values.
for file in "$repo/.kiln/kiln.db" "$repo/.kiln/kiln.db-wal"; do
  [[ -e "$file" ]] || continue
  expect_contains "mode $(stat -c %a "$file")" "mode 600" "$(basename "$file") is mode 0600"
done
make_repo "$ITEST_DIR/modes"
write_workflow "$ITEST_DIR/modes" ci.yml <<'YAML'
on: push
jobs:
  modes:
    runs-on: self-hosted
    steps:
      - run: echo "script mode $(stat -c %a "$0")"
YAML
commit_all "$ITEST_DIR/modes" "a step that shows its script's mode"
kiln run -C "$ITEST_DIR/modes"
expect_rc 0 "the step that stats its script"
expect_contains "$OUT" "script mode 600" "the step script is mode 0600"

itest_end
