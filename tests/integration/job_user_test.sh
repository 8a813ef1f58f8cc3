#!/usr/bin/env bash
# Jobs as an unprivileged user (kiln.yml jobs.user, issue 26): with kiln as root, a host job's
# steps run as that user, with its own HOME and a workspace it owns (the checkout included),
# outputs and env files still work, and it cannot read kiln.yml, the store or a root-only file —
# neither itself nor through kiln (a benchmark file, an artifact or a test-result file that links
# to one). A kiln.yml the user could read is refused before anything runs. Daemons it leaves
# are still killed.
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin job_user

marker_left() { pgrep -f "sleep 98771[0-9]" >/dev/null; }
trap 'rc=$?; set +e; pkill -9 -f "sleep 98771[0-9]"; (exit $rc); itest_on_exit' EXIT

if [[ "$(id -u)" != 0 ]]; then
  # Not root: the switch cannot happen, and the job must say so instead of running as us.
  repo="$ITEST_DIR/repo"
  make_repo "$repo"
  write_workflow "$repo" ci.yml <<'EOF2'
on: push
jobs:
  a: {runs-on: linux, steps: [{run: echo RAN-AS-ME}]}
EOF2
  commit_all "$repo" ci
  printf 'jobs:\n  user: "%s"\n' "$(($(id -u) + 1))" >"$ITEST_DIR/kiln.yml"
  chmod 600 "$ITEST_DIR/kiln.yml"
  kiln run -C "$repo" --config "$ITEST_DIR/kiln.yml"
  expect_contains "$OUT$ERR" "needs kiln to run as root" "without root, jobs.user is refused"
  expect_not_contains "$OUT" "RAN-AS-ME" "and the step does not run as kiln's user"
  itest_end
fi

user=kiln-itest-job
id -u "$user" >/dev/null 2>&1 ||
  useradd --system --no-create-home --shell /usr/sbin/nologin "$user" ||
  itest_die "cannot create the user $user"
uid="$(id -u "$user")"
chmod 755 "$ITEST_DIR"  # mktemp's 0700 would keep the user out of its own job directory

private="$ITEST_DIR/private.txt"
echo "root-only-7c1f" >"$private"
chmod 600 "$private"
repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF2'
on: push
jobs:
  as-user:
    runs-on: linux
    steps:
      - uses: actions/checkout@v4
      - id: who
        run: |
          echo "WHOAMI uid=$(id -u) user=$USER"
          [[ -O "$HOME" ]] && echo "HOME-IS-MINE"
          touch created-in-workspace && echo "WORKSPACE-WRITABLE"
          [[ -O README.md ]] && echo "CHECKOUT-IS-MINE"
          echo "value=42" >>"$GITHUB_OUTPUT"
          echo "FROM_ENV=yes" >>"$GITHUB_ENV"
          if cat "$KILN_YML" >/dev/null 2>&1; then echo "CONFIG-LEAKED"; else echo "CONFIG-DENIED"; fi
          if cat "$PRIVATE" >/dev/null 2>&1; then echo "PRIVATE-LEAKED"; else echo "PRIVATE-DENIED"; fi
          if cat "$STORE" >/dev/null 2>&1; then echo "STORE-LEAKED"; else echo "STORE-DENIED"; fi
          ( setsid sleep 987711 & )
      - run: echo "NEXT out=${{ steps.who.outputs.value }} env=$FROM_ENV"
  through-kiln:
    runs-on: linux
    steps:
      - run: |
          ln -s "$PRIVATE" bench.json
          echo bench.json >>"$KILN_BENCHMARKS"
          ln -s "$PRIVATE" results.xml
          echo results.xml >>"$KILN_TEST_RESULTS"
          ln -s "$PRIVATE" leak.txt
      - uses: actions/upload-artifact@v4
        with: {name: leak, path: leak.txt}
EOF2
commit_all "$repo" "jobs that try to read what they may not"
config="$ITEST_DIR/kiln.yml"
printf 'jobs:\n  user: %s\n' "$user" >"$config"

chmod 644 "$config"
kiln run -C "$repo" --config "$config"
expect_rc 2 "a kiln.yml the job user could read is refused"
expect_contains "$ERR" "is readable by jobs.user 'kiln-itest-job' (mode 0644)" "and the error says why and what to run"
expect_not_contains "$OUT" "WHOAMI" "nothing ran"

chmod 600 "$config"
export KILN_YML="$config" PRIVATE="$private" STORE="$repo/.kiln/kiln.db"
kiln run -C "$repo" --config "$config"
expect_rc 1 "the run fails (the job reading through kiln)"
expect_contains "$OUT" "WHOAMI uid=$uid user=$user" "the steps run as the job user"
for word in HOME-IS-MINE WORKSPACE-WRITABLE CHECKOUT-IS-MINE CONFIG-DENIED PRIVATE-DENIED STORE-DENIED; do
  expect_contains "$OUT" "$word" "as-user: $word"
done
expect_not_contains "$OUT" "LEAKED" "the job reads neither kiln.yml, the store nor a root-only file"
expect_contains "$OUT" "NEXT out=42 env=yes" "outputs and GITHUB_ENV still reach the next step"
expect_contains "$OUT" "benchmark results: $repo" "the benchmark file linking to a root-only file is refused"
expect_contains "$OUT" "not readable by jobs.user" "kiln says why it does not read it"
if grep -rq "root-only-7c1f" "$repo/.kiln" 2>/dev/null || grep -q "root-only-7c1f" <<<"$OUT$ERR"; then
  fail "the root-only file's text reached the output, the store or an artifact"
else
  pass "the root-only file's text is nowhere: output, store, artifacts"
fi
check "the daemon the job left is killed" wait_until 5 bash -c '! pgrep -f "sleep 98771[0-9]" >/dev/null'
itest_end
