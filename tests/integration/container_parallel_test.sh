#!/usr/bin/env bash
# Parallel steps in a job container on real podman (runc), through the step helper and through
# `podman exec`: a background server beside a foreground step, stopped by `cancel:` with SIGINT
# first (the step's trap runs inside the container), a `parallel:` group whose members run at
# once with their outputs read after it, each step's lines kept apart, a background step left at
# the job's end waited for, one left running when the job fails cancelled, and nothing left in
# the container or on the host. The image is the local busybox test image (build_test_image.sh).
# Checks call small functions indirectly (check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin container_parallel

command -v podman >/dev/null || itest_die "podman is not installed (./scripts/deps installs it)"
export KILN_CONTAINER_ENGINE=podman
bash "$KILN_SOURCE_DIR/tests/containers/build_test_image.sh" podman >/dev/null ||
  itest_die "cannot build the test image"
image=localhost/kiln-test:1

run_kiln() {
  RC=0
  "$KILN" run "$@" >"$ITEST_DIR/last.out" 2>"$ITEST_DIR/last.err" </dev/null &
  KILN_PID=$!
  itest_track_pid "$KILN_PID"
  wait "$KILN_PID" || RC=$?
  OUT="$(cat "$ITEST_DIR/last.out")"
  ERR="$(cat "$ITEST_DIR/last.err")"
}
nothing_left() {
  [[ -z "$(podman ps -a -q --filter "label=kiln.owner-pid=$KILN_PID")" ]]
}

parallel_case() {  # parallel_case NAME KILN_STEP_HELPER
  local repo="$ITEST_DIR/parallel-$1"
  make_repo "$repo"
  write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  serve:
    runs-on: linux
    container: $image
    steps:
      - id: server
        background: true
        run: |
          trap 'echo "server: interrupted inside the container"; exit 0' INT
          echo "server: up"
          touch up
          while true; do sleep 0.2; done
      - name: Test against it
        run: |
          i=0; until [ -e up ]; do sleep 0.05; i=\$((i + 1)); [ \$i -lt 600 ] || exit 9; done
          echo "test: the server is up, its outcome is [\${{ steps.server.outcome }}]"
      - cancel: server
      - parallel:
          - id: a
            run: |
              touch a-started; until [ -e b-started ]; do sleep 0.05; done
              echo "a=one" >> "\$GITHUB_OUTPUT"
              echo "a: built beside b"
          - id: b
            run: |
              touch b-started; until [ -e a-started ]; do sleep 0.05; done
              echo "b=two" >> "\$GITHUB_OUTPUT"
              echo "b: built beside a"
      - run: echo "after: \${{ steps.server.outcome }}/\${{ steps.server.conclusion }} \${{ steps.a.outputs.a }} \${{ steps.b.outputs.b }}"
      - id: late
        background: true
        run: sleep 1; echo "late: ended by itself"
  failing:
    runs-on: linux
    container: $image
    steps:
      - id: forever
        background: true
        run: |
          trap 'echo "forever: interrupted"; exit 0' INT
          while true; do sleep 0.2; done
      - run: sleep 0.5; exit 4
EOF
  commit_all "$repo" "parallel steps in a job container"
  KILN_STEP_HELPER="$2" run_kiln -C "$repo" --json
  expect_rc 1 "$1: the run fails (the failing job)"
  expect_json '[j["conclusion"] for j in sorted(d["runs"][0]["jobs"], key=lambda j: j["key"])]' \
    '["failure", "success"]' "$1: the job with the server succeeds, the failing one fails"
  local steps='[j for j in d["runs"][0]["jobs"] if j["key"] == "serve"][0]["steps"]'
  expect_json "[(s['outcome'], s['conclusion']) for s in $steps]" \
    '[["cancelled", "cancelled"], ["success", "success"], ["success", "success"], ["success", "success"], ["success", "success"], ["success", "success"], ["success", "success"], ["success", "success"]]' \
    "$1: the cancelled server is cancelled, every other step succeeds"
  expect_contains "$OUT$ERR" "[server] server: up" "$1: the server's lines are shown under its id"
  local log
  log="$("$KILN" logs 1 serve -C "$repo" 2>&1)"
  expect_contains "$log" "server: interrupted inside the container" \
    "$1: cancel: sends SIGINT first, to the step inside the container"
  expect_contains "$log" "test: the server is up, its outcome is []" \
    "$1: the foreground step runs while the server does; steps.server appears only once it ended"
  expect_contains "$log" "after: cancelled/cancelled one two" \
    "$1: the group's outputs and the cancelled step's outcome are read after them"
  expect_contains "$log" "late: ended by itself" "$1: a background step left at the job's end is waited for"
  expect_match "$log" "^-- step 1: " "$1: each step's lines are stored as that step's"
  local server_part
  server_part="$(awk '/^-- step 1: /{on=1; next} /^-- step /{on=0} on' <<<"$log")"
  expect_contains "$server_part" "server: up" "$1: the server's lines are stored under its step"
  expect_not_contains "$server_part" "test: the server is up" "$1: no other step's line is among them"
  log="$("$KILN" logs 1 failing -C "$repo" 2>&1)"
  expect_contains "$log" "cancelling background step 'forever': the job failed" \
    "$1: a background step still running when the job fails is cancelled"
  expect_contains "$log" "forever: interrupted" "$1: ... with SIGINT first"
  check "$1: no container is left" nothing_left
}
parallel_case helper ""
parallel_case exec off

itest_end
