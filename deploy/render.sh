#!/usr/bin/env bash
# Writes deploy/rendered/<overlay>.yaml for every deploy/overlays/<overlay>: `kubectl kustomize` (offline), then
# prettier (the repository's YAML style; values unchanged). test/deploy/manifests.test.ts fails when a rendered file
# and its overlay disagree: run this after every change under deploy/ and commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
kubectl=${KUBECTL:-kubectl}
rm -f deploy/rendered/*.yaml
for dir in deploy/overlays/*/; do
  name=$(basename "$dir")
  out=deploy/rendered/$name.yaml
  {
    printf '# Rendered from deploy/overlays/%s by deploy/render.sh (kubectl kustomize): do not edit, re-render.\n' "$name"
    "$kubectl" kustomize "$dir"
  } | npx --no-install prettier --stdin-filepath "$out" > "$out"
  echo "$out"
done
