#!/usr/bin/env bash
# Builds test/k8s/bin/helm from the Go module proxy (issue [R] item 6): helm.sh/helm/v4 at the version pinned by
# test/k8s/helm/go.mod and go.sum (a module of its own: the k8s.io replaces of test/k8s/go.mod would fight helm's
# requirements). Does nothing when test/k8s/bin/helm already reports that version. Go keeps its module and build
# caches (`go env GOMODCACHE GOCACHE`) between runs, so a rebuild after `rm test/k8s/bin/helm` is a link.
# Usage: test/k8s/build-helm.sh [--force]. Prints the binary's path on stdout, progress on stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
module="$root/test/k8s/helm"
out="$root/test/k8s/bin/helm"

command -v go >/dev/null || { echo "build-helm: go is not on PATH (Go >= 1.24 builds helm, tool directives)" >&2; exit 1; }
version=$(cd "$module" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
[[ $version =~ ^v4\.[0-9]+\.[0-9]+$ ]] || { echo "build-helm: unexpected helm version '$version' in $module/go.mod" >&2; exit 1; }

if [[ ${1:-} != --force && -x $out ]] && [[ $("$out" version --template '{{.Version}}' 2>/dev/null || true) == "$version" ]]; then
  echo "build-helm: $out is helm $version already" >&2
  echo "$out"
  exit 0
fi

mkdir -p "$(dirname "$out")"
echo "build-helm: building helm $version into $out" >&2
start=$SECONDS
# helm's own Makefile stamps the version the same way (internal/version); -s -w as its release builds. The binary
# goes to a temporary name first, so an interrupted build never leaves a half-written helm that looks current.
(
  cd "$module"
  CGO_ENABLED=0 go build -mod=readonly -o "$out.tmp" \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$version -X helm.sh/helm/v4/internal/version.metadata=" \
    helm.sh/helm/v4/cmd/helm
)
mv -f "$out.tmp" "$out"
echo "build-helm: helm $version built in $((SECONDS - start)) s" >&2
echo "$out"
