#!/usr/bin/env bash
# include_order.py against a tree of its own: an include down the order passes, one up the order
# fails at its FILE:LINE:COL, a nested module (a/b listed apart from a) counts as its own.
set -euo pipefail
check="$(dirname "$0")/include_order.py"
tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/src/kiln/core" "$tree/src/kiln/a/b"
printf 'add_subdirectory(src/kiln/core)\nadd_subdirectory(src/kiln/a/b)\nadd_subdirectory(src/kiln/a)\n' \
  >"$tree/CMakeLists.txt"
printf '#pragma once\n' >"$tree/src/kiln/core/x.h"
printf '#include "kiln/core/x.h"\n' >"$tree/src/kiln/a/b/y.h"
printf '#include "kiln/a/b/y.h"\n#include "kiln/core/x.h"\n' >"$tree/src/kiln/a/z.cpp"
python3 "$check" "$tree" || { echo "FAIL: a tree in order was refused"; exit 1; }

printf '// up\n  #include "kiln/a/z.h"\n' >"$tree/src/kiln/a/b/w.cpp"
if out="$(python3 "$check" "$tree")"; then
  echo "FAIL: a/b/ including a/ passed"; exit 1
fi
grep -qF 'src/kiln/a/b/w.cpp:2:13: error: a/b/ includes kiln/a/z.h, but a/ comes after a/b/' <<<"$out" ||
  { echo "FAIL: unexpected message: $out"; exit 1; }

rm "$tree/src/kiln/a/b/w.cpp"
printf '#include "kiln/nowhere/q.h"\n' >"$tree/src/kiln/core/q.cpp"
if out="$(python3 "$check" "$tree")"; then
  echo "FAIL: an include of an unlisted module passed"; exit 1
fi
grep -qF 'src/kiln/core/q.cpp:1:11: error: kiln/nowhere/q.h is in no module' <<<"$out" ||
  { echo "FAIL: unexpected message: $out"; exit 1; }
echo "include_order_test: ok"
