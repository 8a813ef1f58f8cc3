#!/usr/bin/env bash
# kiln validate and kiln run --dry-run of one workflow with N jobs (default 100,000), each
# needing an earlier one: wall time and peak memory of both (docs/performance.md).
#   bench/many_jobs.sh build/kiln [N]
set -eu
kiln=$(realpath "$1"); n=${2:-100000}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/.github/workflows" && cd "$dir"
python3 - "$n" <<'PY'
import sys
n = int(sys.argv[1])
with open('.github/workflows/many.yml', 'w') as f:
    f.write('on: push\njobs:\n')
    for i in range(n):
        f.write(f'  j{i}:\n    runs-on: ubuntu-latest\n')
        if i:
            f.write(f'    needs: j{i - 1 if i % 10 == 0 else (i // 10) * 10}\n')
        f.write('    steps: [{run: echo}]\n')
PY
git init -q -b main . && git add -A && git -c user.name=b -c user.email=b@b commit -qm bench
/usr/bin/time -f "validate $n jobs: %e s, %M KB peak" "$kiln" validate -q .github/workflows/many.yml
/usr/bin/time -f "dry-run  $n jobs: %e s, %M KB peak" "$kiln" run --dry-run --json >/dev/null
