#!/usr/bin/env bash
# cmake --install of the build kiln was built in (docs/serve.md "Install as a service"): kiln,
# kiln-step-helper and kiln-subreaper side by side, stripped, their debug information in
# lib/debug/bin/*.debug (linked by .gnu_debuglink), the systemd unit naming the installed kiln
# and an unprivileged user, the docs. The installed kiln holds its steps with the installed
# holder (a daemon a step leaves is killed). The build tree's kiln keeps its debug information.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin install

build="$(dirname "$KILN")"
prefix="$ITEST_DIR/prefix"
RC=0
cmake --install "$build" --prefix "$prefix" >"$ITEST_DIR/install.out" 2>&1 || RC=$?
if [[ "$RC" == 0 ]]; then pass "cmake --install --prefix succeeds"; else
  fail "cmake --install failed ($RC)"; tail -20 "$ITEST_DIR/install.out" >&2; fi

for file in bin/kiln bin/kiln-step-helper bin/kiln-subreaper lib/debug/bin/kiln.debug \
  lib/debug/bin/kiln-step-helper.debug lib/debug/bin/kiln-subreaper.debug \
  lib/systemd/system/kiln.service share/doc/kiln/serve.md share/doc/kiln/README.md \
  share/bash-completion/completions/kiln; do
  if [[ -f "$prefix/$file" ]]; then pass "installs $file"; else fail "no $file installed"; fi
done
sections() { readelf -S -W "$1" 2>/dev/null | grep -o '\.debug_info\|\.gnu_debuglink' | sort -u | tr '\n' ' '; }
if [[ "$(sections "$prefix/bin/kiln")" == ".gnu_debuglink " ]]; then
  pass "the installed kiln has no debug info, only the link to kiln.debug"
else fail "the installed kiln's sections: $(sections "$prefix/bin/kiln")"; fi
expect_contains "$(sections "$prefix/lib/debug/bin/kiln.debug")" ".debug_info" \
  "kiln.debug holds the debug info"
expect_contains "$(sections "$KILN")" ".debug_info" "the build tree's kiln keeps its debug info"
expect_contains "$("$prefix/bin/kiln" --version 2>&1)" "kiln " "the installed kiln runs"

# The installed kiln holds each step with the installed kiln-subreaper: a daemon that leaves
# its session and environment is killed at the job's end, as in the build tree.
repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF'
on: push
jobs:
  daemon:
    runs-on: linux
    steps:
      - run: |
          env -i setsid sleep 300 >/dev/null 2>&1 </dev/null &
          echo $! > "$DAEMON_PID"
EOF
commit_all "$repo" "a step that leaves a daemon"
export DAEMON_PID="$ITEST_DIR/daemon.pid"
KILN="$prefix/bin/kiln" kiln run -C "$repo"
expect_rc 0 "the installed kiln runs a workflow"
expect_contains "$OUT" "Cleaning up: killed leftover process" \
  "its step's holder (the installed kiln-subreaper) killed the daemon"
daemon="$(cat "$DAEMON_PID" 2>/dev/null || echo none)"
if [[ "$daemon" != none && "$(cut -d' ' -f3 "/proc/$daemon/stat" 2>/dev/null || echo gone)" =~ ^(gone|Z)$ ]]; then
  pass "the daemon is gone"
else
  fail "the daemon $daemon survived the job"
  kill -9 "$daemon" 2>/dev/null || true
fi
# The bash completion, as bash-completion would call it: COMP_WORDS/COMP_CWORD, then COMPREPLY.
complete_words() {  # complete_words WORD... (the last one is the word being completed)
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kiln; echo "${COMPREPLY[*]}"' \
    _ "$prefix/share/bash-completion/completions/kiln" "$@"
}
expect_eq "$(complete_words kiln ru)" "run runs" "completion: the subcommands that start so"
expect_eq "$(complete_words kiln run --jo)" "--job" "completion: a subcommand's options"
expect_eq "$(complete_words kiln bench com)" "compare" "completion: a subcommand's subcommands"
expect_eq "$(complete_words kiln run --config x.yml --jo)" "--job" \
  "completion: an option's value is not taken for a subcommand"
expect_eq "$(complete_words kiln run --config "")" "" \
  "completion: an option's value is left to file names (complete -o default)"
expect_contains "$("$KILN" completion bash)" "complete -o default -F _kiln kiln" \
  "kiln completion bash prints the script"
kiln completion zsh
expect_rc 2 "kiln completion of a shell it does not know"

unit="$(cat "$prefix/lib/systemd/system/kiln.service" 2>/dev/null)"
expect_contains "$unit" "ExecStart=$prefix/bin/kiln serve --config /etc/kiln/kiln.yml" \
  "the unit starts the installed kiln serve"
expect_contains "$unit" "User=kiln" "the unit runs as the unprivileged user kiln"
if command -v systemd-analyze >/dev/null; then
  RC=0
  systemd-analyze verify "$prefix/lib/systemd/system/kiln.service" >"$ITEST_DIR/verify.out" 2>&1 || RC=$?
  if grep -qi "unknown key\|unknown section\|invalid" "$ITEST_DIR/verify.out"; then
    fail "systemd-analyze verify finds problems:"; cat "$ITEST_DIR/verify.out" >&2
  else pass "systemd-analyze verify names no unknown key"; fi
fi
itest_end
