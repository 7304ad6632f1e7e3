#!/usr/bin/env bash
# Writes deploy/rendered/<overlay>.yaml for every deploy/overlays/<overlay>: `kubectl kustomize` (offline), then
# prettier (the repository's YAML style; values unchanged). test/deploy/manifests.test.ts fails when a rendered file
# and its overlay disagree: run this after every change under deploy/ and commit the result. It first writes
# deploy/components/monitoring/prometheus-rule.yaml from alert-rules.yaml beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
kubectl=${KUBECTL:-kubectl}

# The PrometheusRule of deploy/components/monitoring is its alert-rules.yaml (the plain rules file that promtool
# checks and a Prometheus without the operator loads) under `spec:`; test/deploy/monitoring.test.ts checks they agree.
monitoring=deploy/components/monitoring
{
  printf '# Generated from alert-rules.yaml by deploy/render.sh: do not edit; edit alert-rules.yaml and re-render.\n'
  printf 'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\n'
  printf 'metadata:\n  name: ascend-npu-agent\n  namespace: kube-system\n  labels: { app: ascend-npu-agent }\nspec:\n'
  grep -v '^#' "$monitoring/alert-rules.yaml" | sed 's/^/  /'
} | npx --no-install prettier --stdin-filepath "$monitoring/prometheus-rule.yaml" > "$monitoring/prometheus-rule.yaml.new"
mv "$monitoring/prometheus-rule.yaml.new" "$monitoring/prometheus-rule.yaml"
echo "$monitoring/prometheus-rule.yaml"

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
