# Shared helpers for tests/integration/*_test.sh: source it, then call `itest_begin NAME`.
#
# Each script drives the real kiln binary ($KILN) on throwaway git repositories under one
# mktemp directory ($ITEST_DIR). The directory is removed when every check passed and kept (its
# path printed) otherwise. Checks count passes and failures and go on; `itest_end` prints
# "N passed, M failed" and exits non-zero when a check failed. `itest_die` stops at once, for
# a failure that makes the later checks meaningless.
#
# Every process a test starts in the background is registered with `itest_track_pid` and every
# job token it learns with `itest_track_token`: the exit trap kills what is left of them, so a
# failed script leaves no process behind.

# OUT, ERR, RC and WAIT_RC are set here for the scripts that source this file.
# shellcheck disable=SC2034

set -euo pipefail

ITEST_PASSED=0
ITEST_FAILED=0
ITEST_NAME=""
ITEST_DIR=""
ITEST_PIDS=()
ITEST_TOKENS=()

itest_begin() {
  ITEST_NAME="$1"
  if [[ -z "${KILN:-}" ]]; then
    echo "$ITEST_NAME: KILN is not set (the path of the kiln binary)" >&2
    exit 2
  fi
  if [[ "$KILN" != /* ]]; then KILN="$PWD/$KILN"; fi
  if [[ ! -x "$KILN" ]]; then
    echo "$ITEST_NAME: KILN=$KILN is not an executable file" >&2
    exit 2
  fi
  KILN_SOURCE_DIR="${KILN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
  export KILN KILN_SOURCE_DIR
  ITEST_DIR="$(mktemp -d "${TMPDIR:-/tmp}/kiln-${ITEST_NAME}.XXXXXX")"
  # A predictable environment: no colours, a git identity, no user or system git config, and
  # none of the caller's CI variables leaking into the jobs' environment.
  export NO_COLOR=1
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
  export GIT_AUTHOR_NAME="Kiln Test" GIT_AUTHOR_EMAIL="kiln-test@example.invalid"
  export GIT_COMMITTER_NAME="Kiln Test" GIT_COMMITTER_EMAIL="kiln-test@example.invalid"
  unset KILN_JOB_TOKEN KILN_RUN_ID KILN_JOB_ID GITHUB_ACTIONS GITHUB_WORKSPACE || true
  # GPU leases and quarantine of this test alone, not the user's host store.
  export KILN_HOST_STORE="$ITEST_DIR/host.db"
  trap itest_on_exit EXIT
  echo "== $ITEST_NAME (kiln: $KILN, dir: $ITEST_DIR)"
}

itest_on_exit() {
  local status=$?
  local pid token
  for pid in "${ITEST_PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  done
  for token in "${ITEST_TOKENS[@]}"; do itest_kill_token "$token" >/dev/null; done
  if [[ $status -eq 0 && $ITEST_FAILED -eq 0 ]]; then
    rm -rf "$ITEST_DIR"
  else
    echo "$ITEST_NAME: kept the test directory for inspection: $ITEST_DIR" >&2
  fi
  exit "$status"
}

itest_track_pid() { ITEST_PIDS+=("$1"); }
itest_track_token() { ITEST_TOKENS+=("$1"); }

# ---- results ----------------------------------------------------------------------------------

pass() {
  ITEST_PASSED=$((ITEST_PASSED + 1))
  echo "  ok: $*"
}

fail() {
  ITEST_FAILED=$((ITEST_FAILED + 1))
  echo "  FAIL: $*" >&2
}

itest_die() {
  fail "$*"
  itest_end
}

itest_end() {
  echo "$ITEST_NAME: $ITEST_PASSED passed, $ITEST_FAILED failed"
  if [[ $ITEST_FAILED -gt 0 ]]; then exit 1; fi
  exit 0
}

# ---- running kiln -----------------------------------------------------------------------------

# kiln ARGS...: runs $KILN with stdout, stderr and the exit code in $OUT, $ERR and $RC (and in
# the files $ITEST_DIR/last.out and last.err). Never fails the script.
kiln() {
  RC=0
  "$KILN" "$@" >"$ITEST_DIR/last.out" 2>"$ITEST_DIR/last.err" </dev/null || RC=$?
  OUT="$(cat "$ITEST_DIR/last.out")"
  ERR="$(cat "$ITEST_DIR/last.err")"
}

# Prints what the last kiln call printed, indented: for the message of a failed check.
show_last() {
  echo "    --- exit code $RC; stdout:" >&2
  sed 's/^/    | /' "$ITEST_DIR/last.out" | head -40 >&2
  echo "    --- stderr:" >&2
  sed 's/^/    | /' "$ITEST_DIR/last.err" | head -40 >&2
}

# expect_rc WANT DESCRIPTION: checks the exit code of the last kiln call.
expect_rc() {
  if [[ "$RC" == "$1" ]]; then
    pass "$2 (exit $RC)"
  else
    fail "$2: expected exit code $1, got $RC"
    show_last
  fi
}

# expect_contains TEXT NEEDLE DESCRIPTION (fixed string).
expect_contains() {
  if grep -qF -- "$2" <<<"$1"; then
    pass "$3"
  else
    fail "$3: '$2' not found in:"
    sed 's/^/    | /' <<<"$1" | head -40 >&2
  fi
}

# expect_eq GOT WANT DESCRIPTION.
expect_eq() {
  if [[ "$1" == "$2" ]]; then
    pass "$3"
  else
    fail "$3: expected '$2', got '$1'"
  fi
}

expect_not_contains() {
  if grep -qF -- "$2" <<<"$1"; then
    fail "$3: '$2' found in:"
    grep -nF -- "$2" <<<"$1" | sed 's/^/    | /' | head -10 >&2
  else
    pass "$3"
  fi
}

# expect_match TEXT ERE DESCRIPTION (extended regular expression, any line).
expect_match() {
  if grep -qE -- "$2" <<<"$1"; then
    pass "$3"
  else
    fail "$3: no line matches /$2/ in:"
    sed 's/^/    | /' <<<"$1" | head -40 >&2
  fi
}

# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() {
  local description="$1"
  shift
  if "$@"; then pass "$description"; else fail "$description"; fi
}

# json_eval FILE EXPRESSION: prints a Python expression over `d`, the JSON document in FILE
# ("-" for $OUT). Fails (non-zero) when the file is not JSON or the expression raises.
json_eval() {
  local file="$1"
  if [[ "$file" == "-" ]]; then file="$ITEST_DIR/last.out"; fi
  python3 - "$file" "$2" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
result = eval(sys.argv[2], {"d": d})
if isinstance(result, (dict, list)):
    print(json.dumps(result))
elif isinstance(result, bool):
    print("true" if result else "false")
else:
    print(result)
PY
}

# expect_json EXPRESSION WANT DESCRIPTION: json_eval over $OUT equals WANT.
expect_json() {
  local got
  if ! got="$(json_eval - "$1" 2>&1)"; then
    fail "$3: cannot evaluate $1 over the output: $got"
    show_last
    return
  fi
  if [[ "$got" == "$2" ]]; then
    pass "$3"
  else
    fail "$3: $1 is '$got', expected '$2'"
  fi
}

# ---- repositories -----------------------------------------------------------------------------

# make_repo DIR: a git repository on branch main with one commit (a README).
make_repo() {
  local dir="$1"
  mkdir -p "$dir"
  git -C "$dir" init -q -b main
  if [[ ! -e "$dir/README.md" ]]; then echo "# test repository" >"$dir/README.md"; fi
  commit_all "$dir" "initial commit"
}

# commit_all DIR MESSAGE: commits every change in DIR.
commit_all() {
  git -C "$1" add -A
  git -C "$1" commit -q -m "$2"
}

# write_workflow REPO NAME: writes stdin to REPO/.github/workflows/NAME.
write_workflow() {
  mkdir -p "$1/.github/workflows"
  cat >"$1/.github/workflows/$2"
}

# ---- processes --------------------------------------------------------------------------------

# token_pids TOKEN: the pids of processes whose environment holds KILN_JOB_TOKEN=TOKEN.
token_pids() {
  local token="$1" environ pid
  for environ in /proc/[0-9]*/environ; do
    pid="${environ#/proc/}"
    pid="${pid%/environ}"
    [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
    if grep -qzxF "KILN_JOB_TOKEN=$token" "$environ" 2>/dev/null; then
      # Zombies keep their pid but lose their environment; a live match is a live process.
      echo "$pid"
    fi
  done
}

# itest_kill_token TOKEN: SIGKILLs every process with the token; prints what it killed.
itest_kill_token() {
  local pid
  for pid in $(token_pids "$1"); do
    echo "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo '?'))"
    kill -9 "$pid" 2>/dev/null || true
  done
}

# token_of_pid PID: the KILN_JOB_TOKEN in that process's environment (empty if none).
token_of_pid() {
  { tr '\0' '\n' <"/proc/$1/environ"; } 2>/dev/null | sed -n 's/^KILN_JOB_TOKEN=//p' | head -1 || true
}

# tokens_with_marker MARKER: job tokens of live processes whose environment contains the line
# ITEST_MARKER=MARKER (a variable the test's workflow sets), one per line, deduplicated.
tokens_with_marker() {
  local environ pid
  for environ in /proc/[0-9]*/environ; do
    pid="${environ#/proc/}"
    pid="${pid%/environ}"
    if grep -qzxF "ITEST_MARKER=$1" "$environ" 2>/dev/null; then
      token_of_pid "$pid"
    fi
  done | sort -u | sed '/^$/d'
}

# wait_until SECONDS COMMAND...: polls the command every 0.1 s until it succeeds; fails when
# SECONDS pass first.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  while ! "$@"; do
    if [[ $SECONDS -ge $deadline ]]; then return 1; fi
    sleep 0.1
  done
}

# wait_exit PID SECONDS: waits for a background child of this shell to end; its exit code is in
# $WAIT_RC. Fails (and leaves it running) when SECONDS pass first.
wait_exit() {
  local pid="$1" deadline=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null; do
    # A zombie child counts as ended; `wait` reaps it below.
    if [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == "Z" ]]; then break; fi
    if [[ $SECONDS -ge $deadline ]]; then return 1; fi
    sleep 0.1
  done
  WAIT_RC=0
  wait "$pid" || WAIT_RC=$?
}
