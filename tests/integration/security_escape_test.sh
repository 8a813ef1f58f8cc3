#!/usr/bin/env bash
# Process clean-up that nothing escapes (issue 26, exec/subreaper.h): a job whose steps leave
# daemons behind every way a shell can — setsid, `setsid env -i`, a double fork, nohup, disown,
# `setsid -f`, a Python daemon that clears its environment and closes its descriptors, one that
# ignores SIGTERM and SIGHUP, a respawning supervisor loop — leaves 0 of them once the job ends,
# while a later step of the same job still sees them (as on GitHub). The same after kill -9 of
# kiln in the middle of the job: the holders see kiln gone and kill their subtrees. Every
# escaper runs a command line with a marker (98760N), cleared environment or not.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin security_escape

# marker_pids: the pids of live processes whose command line has a marker of this test.
marker_pids() {
  local cmdline pid
  for cmdline in /proc/[0-9]*/cmdline; do
    pid="${cmdline#/proc/}"
    pid="${pid%/cmdline}"
    [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && continue
    if { tr '\0' ' ' <"$cmdline"; } 2>/dev/null | grep -q "98760[0-9]"; then echo "$pid"; fi
  done
}
no_marker_left() { [[ -z "$(marker_pids)" ]]; }
cleanup_markers() { for pid in $(marker_pids); do kill -9 "$pid" 2>/dev/null || true; done; }
# Whatever a failed run leaves is killed too; the script's exit status is kept for itest_on_exit.
trap 'rc=$?; set +e; cleanup_markers; (exit $rc); itest_on_exit' EXIT

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" escape.yml <<'EOF'
name: escape
on: push
jobs:
  escape:
    runs-on: linux
    steps:
      - name: Leave daemons behind, every way
        run: |
          setsid sleep 987600 &
          setsid env -i sleep 987601 &
          ( ( env -i sleep 987602 & ) & )
          nohup env -i sleep 987603 >/dev/null 2>&1 &
          env -i sleep 987604 &
          disown
          setsid -f env -i sh -c 'exec sleep 987605'
          python3 - <<'PY'
          import os, sys
          if os.fork(): sys.exit(0)
          os.setsid()
          if os.fork(): os._exit(0)
          for fd in range(3):
              os.close(fd)
          os.execve("/bin/sleep", ["sleep", "987606"], {})
          PY
          env -i bash -c 'trap "" TERM HUP; exec -a sleep-987607 sleep 999999' &
          setsid env -i sh -c 'while true; do sleep 987608 & wait; done' >/dev/null 2>&1 &
          sleep 1
      - name: A later step still sees them
        run: |
          n=$(for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done | grep -c "[9]8760[0-9]")
          echo "escapers alive in a later step: $n"
EOF
commit_all "$repo" "a job that leaves daemons"

kiln run -C "$repo"
expect_rc 0 "the job succeeds"
expect_match "$OUT" "escapers alive in a later step: (9|1[0-9])" \
  "the daemons of a step live on into the job's later steps (at least 9)"
check "no escaper survives the job" wait_until 2 no_marker_left
left="$(marker_pids)"
[[ -z "$left" ]] || echo "    left: $(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)" >&2
expect_contains "$OUT$ERR" "Cleaning up: killed leftover process" "the log names what was killed"
cleanup_markers

# kill -9 of kiln while the job holds its daemons.
write_workflow "$repo" escape.yml <<'EOF'
name: escape
on: push
jobs:
  escape:
    runs-on: linux
    steps:
      - run: |
          setsid env -i sleep 987600 &
          ( ( env -i sleep 987602 & ) & )
          setsid -f env -i sh -c 'exec sleep 987605'
          env -i bash -c 'trap "" TERM HUP; exec -a sleep-987607 sleep 999999' &
          touch "$KILN_STARTED"
          sleep 600
EOF
commit_all "$repo" "a job killed with its daemons"
export KILN_STARTED="$ITEST_DIR/started"
"$KILN" run -C "$repo" >"$ITEST_DIR/killed.out" 2>&1 &
kiln_pid=$!
itest_track_pid "$kiln_pid"
wait_until 60 test -e "$KILN_STARTED" || itest_die "the job did not start"
sleep 0.5
check "the daemons run before kiln is killed" test "$(marker_pids | wc -l)" -ge 4
kill -9 "$kiln_pid"
wait "$kiln_pid" 2>/dev/null || true
check "no escaper survives kill -9 of kiln" wait_until 15 no_marker_left
itest_end
