#!/usr/bin/env bash
# Reads the workflow files of real repositories with kiln, each with its own .github/ tree
# beside it, and prints one table row per file: repository | file | validate | dry-run.
#   scripts/real-workflows.sh KILN GITDIR...   (GITDIR: a bare clone or mirror, owner+name/repo)
# Nothing of those repositories is kept: each .github/ tree is exported to a temporary
# directory that is removed at the end.
set -u
kiln=$1; shift
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export KILN_HOST_STORE="$work/host.db"
echo "| repository | file | validate | dry-run |"
echo "|---|---|---|---|"
for gitdir in "$@"; do
  name=$(basename "$(dirname "$gitdir")"); name=${name/+//}
  repo="$work/${name//\//_}"; mkdir -p "$repo"
  git --git-dir="$gitdir" archive HEAD .github 2>/dev/null | tar -x -C "$repo" || continue
  git -C "$repo" init -q -b main && git -C "$repo" add -A &&
    git -C "$repo" -c user.name=k -c user.email=k@k commit -q -m tree
  for file in "$repo"/.github/workflows/*.y*ml; do
    [ -f "$file" ] || continue
    rel=${file#"$repo"/}
    (cd "$repo" && "$kiln" validate "$rel") >"$work/v.out" 2>&1; v=$?
    "$kiln" run -C "$repo" -W "$rel" --dry-run >"$work/d.out" 2>&1; d=$?
    vres="ok"; [ $v -eq 0 ] || vres="exit $v: $(grep -m1 -E 'error|crash|terminate' "$work/v.out" | sed "s|$repo/||" | cut -c1-110)"
    dres="ok"; [ $d -eq 0 ] || dres="exit $d: $(grep -m1 -E 'error|crash|terminate|no workflow' "$work/d.out" | sed "s|$repo/||" | cut -c1-110)"
    echo "| $name | ${rel#.github/workflows/} | $vres | $dres |"
  done
done
