#!/usr/bin/env bash
# Every committed C++ file of src/ bench/ fuzz/ tests/ (not the data of tests/data/ and
# fuzz/corpus/) is as clang-format-19 writes it with the repository's .clang-format.
# Fix with: clang-format-19 -i FILE...
set -euo pipefail
cd "$(dirname "$0")/../.."
format="${CLANG_FORMAT:-clang-format-19}"
command -v "$format" >/dev/null || { echo "format_check: $format not found (scripts/deps)"; exit 1; }
mapfile -t files < <(git ls-files -- 'src/*' 'bench/*' 'fuzz/*' 'tests/*' |
  grep -E '\.(cpp|cc|h|hpp)$' | grep -vE '^(tests/data|fuzz/corpus)/' || true)
[[ ${#files[@]} -gt 0 ]] || { echo "format_check: no C++ files found (not a git checkout?)"; exit 1; }
"$format" --dry-run -Werror "${files[@]}"
echo "format_check: ${#files[@]} files formatted"
