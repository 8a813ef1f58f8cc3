# Serves forge-src/* as git repositories under $CONFORMANCE_SCRATCH/forge/octo/ (file://),
# and points kiln.yml's actions.url there.
set -e
for name in node-tool composite ci; do
  dir="$CONFORMANCE_SCRATCH/forge/octo/$name"
  mkdir -p "$dir" && cp -r "forge-src/$name/." "$dir/"
  git -C "$dir" init -q -b main && git -C "$dir" add -A && git -C "$dir" commit -q -m "$name"
done
git -C "$CONFORMANCE_SCRATCH/forge/octo/node-tool" tag -a v1 -m v1
git -C "$CONFORMANCE_SCRATCH/forge/octo/node-tool" branch release/v2
sha=$(git -C "$CONFORMANCE_SCRATCH/forge/octo/composite" rev-parse HEAD)
sed -i "s/COMPOSITE_SHA/$sha/" .github/workflows/ci.yml
git commit -q -am "pin the composite action"
printf 'actions:\n  url: file://%s/forge\n' "$CONFORMANCE_SCRATCH" > kiln.yml
