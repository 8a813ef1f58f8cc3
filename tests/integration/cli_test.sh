#!/usr/bin/env bash
# The command line a user meets first: help, bad arguments, bad workflows. Bad input is exit
# code 2 with a message that says where (FILE:LINE:COL for workflows); nothing runs.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin cli

# ---- help and arguments -----------------------------------------------------------------------
kiln --help
expect_rc 0 "kiln --help succeeds"
expect_contains "$OUT" "run" "kiln --help lists the run command"
expect_contains "$OUT" "validate" "kiln --help lists the validate command"

kiln run --help
expect_rc 0 "kiln run --help succeeds"
expect_contains "$OUT" "--dry-run" "kiln run --help lists --dry-run"
expect_contains "$OUT" "--secret" "kiln run --help lists --secret"

kiln run --no-such-option
expect_rc 2 "an unknown option is bad input"
if [[ "$(wc -l <"$ITEST_DIR/last.err")" -eq 1 ]]; then
  pass "an unknown option gives one line on stderr"
else
  fail "an unknown option gives one line on stderr, got:"
  show_last
fi
expect_contains "$ERR" "--no-such-option" "the message names the unknown option"

kiln frobnicate
expect_rc 2 "an unknown subcommand is bad input"

# ---- outside a git repository -----------------------------------------------------------------
mkdir -p "$ITEST_DIR/not-a-repo"
mkdir -p "$ITEST_DIR/not-a-repo/.github/workflows"
cat >"$ITEST_DIR/not-a-repo/.github/workflows/ci.yml" <<'EOF'
on: push
jobs:
  a:
    runs-on: linux
    steps:
      - run: echo should-not-run
EOF
# GIT_CEILING_DIRECTORIES keeps git from finding a repository above the temporary directory.
GIT_CEILING_DIRECTORIES="$ITEST_DIR" kiln run -C "$ITEST_DIR/not-a-repo"
expect_rc 2 "kiln run outside a git repository is bad input"
expect_match "$ERR" "kiln: .*(git|repository)" "it says why (not a git repository)"
expect_not_contains "$OUT" "should-not-run" "nothing ran outside a repository"

# ---- a good repository, bad options -----------------------------------------------------------
repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF'
name: good
on: [push, workflow_dispatch]
jobs:
  hello:
    runs-on: [self-hosted, linux]
    steps:
      - run: echo "hello from the good workflow"
EOF
commit_all "$repo" "add a workflow"

kiln run -C "$repo" --event workflow_dispatch --input no-equals-sign
expect_rc 2 "--input without '=' is bad input"
expect_contains "$ERR" "--input" "the message names --input"
expect_not_contains "$OUT" "hello from the good workflow" "nothing ran after a bad --input"

kiln run -C "$repo" --secret-file "$ITEST_DIR/no-such-secrets.env"
expect_rc 2 "a missing --secret-file is bad input"
expect_contains "$ERR" "no-such-secrets.env" "the message names the missing file"
expect_not_contains "$OUT" "hello from the good workflow" "nothing ran after a bad --secret-file"

kiln run -C "$repo" --event no-such-event
expect_rc 2 "an unknown --event is bad input"

kiln run -C "$repo" --max-parallel -3
expect_rc 2 "a negative --max-parallel is bad input"

kiln logs not-a-number -C "$repo"
expect_rc 2 "kiln logs with a non-numeric run id is bad input"

# ---- kiln validate ----------------------------------------------------------------------------
kiln validate "$repo"
expect_rc 0 "kiln validate accepts a good repository"
expect_contains "$OUT" "1 workflow file checked: 0 errors" "validate reports what it checked"

kiln validate "$repo/.github/workflows/ci.yml"
expect_rc 0 "kiln validate accepts a good workflow file"

(cd "$repo" && kiln validate)
expect_rc 0 "kiln validate with no path checks the current directory"

bad="$ITEST_DIR/bad"
mkdir -p "$bad"
# Line numbers matter below: an unknown job key on line 6, column 5.
cat >"$bad/unknown-key.yml" <<'EOF'
name: unknown key
on: push
jobs:
  build:
    runs-on: linux
    stepz: []
    steps:
      - run: echo hi
EOF
kiln validate "$bad/unknown-key.yml"
expect_rc 2 "an unknown key is an error"
expect_match "$ERR" "^[^:]*unknown-key\.yml:6:5: error: .*stepz" \
  "the unknown key is reported at FILE:6:5"

# A cycle a -> b -> a: reported at a's `needs: b` (line 4, column 12).
cat >"$bad/cycle.yml" <<'EOF'
on: push
jobs:
  a:
    needs: b
    runs-on: linux
    steps:
      - run: echo a
  b:
    needs: [a]
    runs-on: linux
    steps:
      - run: echo b
EOF
kiln validate "$bad/cycle.yml"
expect_rc 2 "cyclic needs are an error"
expect_match "$ERR" "^[^:]*cycle\.yml:4:12: error: .*cycl" "the cycle is reported at FILE:4:12"

# Two broken expressions: a job `if` on line 5 and a step's `run` on line 8.
cat >"$bad/expression.yml" <<'EOF'
on: push
jobs:
  a:
    runs-on: linux
    if: github.ref ==
    steps:
      - name: fine
        run: echo "${{ foo( }}"
EOF
kiln validate "$bad/expression.yml"
expect_rc 2 "a bad expression is an error"
expect_match "$ERR" "^[^:]*expression\.yml:5:[0-9]+: error: " "the bad job if is reported on line 5"
expect_match "$ERR" "^[^:]*expression\.yml:8:[0-9]+: error: " "the bad run expression is reported on line 8"

# Every diagnostic line has the FILE:LINE:COL: error: shape.
kiln validate "$bad"
expect_rc 2 "validating a directory with bad workflows fails"
malformed="$(grep -vE '^[^:]+:[0-9]+:[0-9]+: (error|warning): ' "$ITEST_DIR/last.err" || true)"
if [[ -z "$malformed" ]]; then
  pass "every diagnostic has the FILE:LINE:COL: error: shape"
else
  fail "diagnostics without the FILE:LINE:COL shape:"
  sed 's/^/    | /' <<<"$malformed" >&2
fi
for file in unknown-key.yml cycle.yml expression.yml; do
  expect_contains "$ERR" "$file:" "validating the directory reports $file"
done

kiln validate "$ITEST_DIR/no-such-path"
expect_rc 2 "validating a missing path is an error"

# ---- kiln run on an invalid workflow runs nothing ---------------------------------------------
badrepo="$ITEST_DIR/badrepo"
make_repo "$badrepo"
marker_file="$ITEST_DIR/bad-workflow-ran"
write_workflow "$badrepo" ci.yml <<EOF
on: push
jobs:
  first:
    runs-on: linux
    steps:
      - run: touch "$marker_file" && echo JOB-OUTPUT-FIRST
  second:
    runs-on: linux
    needs: [first]
    stepz: []
    steps:
      - run: echo JOB-OUTPUT-SECOND
EOF
commit_all "$badrepo" "add a broken workflow"
kiln run -C "$badrepo"
expect_rc 2 "kiln run on an invalid workflow is bad input"
expect_match "$ERR" "ci\.yml:10:5: error: .*stepz" "kiln run reports the error at FILE:LINE:COL"
expect_not_contains "$OUT$ERR" "JOB-OUTPUT-FIRST" "no job of the invalid workflow printed anything"
expect_not_contains "$OUT" "job started" "no job of the invalid workflow started"
check "no step of the invalid workflow ran" test ! -e "$marker_file"

kiln runs -C "$badrepo"
if [[ "$RC" == 0 ]] && ! grep -qE '^ *[0-9]+ ' <<<"$OUT"; then
  pass "an invalid workflow adds no run"
else
  fail "an invalid workflow adds no run"
  show_last
fi

itest_end
