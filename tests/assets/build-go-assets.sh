#!/usr/bin/env bash
# Builds the real Go programs the tests run against, from the Go module proxy,
# into a cache outside the repository keyed by version: a second run builds nothing.
#
#   tests/assets/build-go-assets.sh            # build what is missing, print the cache dir
#
# Layout: $ASSET_CACHE/<component>-<version>/{bin/*,...,.complete}
# The versions here are the project's pins; change one and the
# cache key changes with it.
set -euo pipefail

K8S_VERSION=v1.36.3          # kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl
K8S_STAGING_VERSION=v0.36.3  # the published staging modules matching K8S_VERSION
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
OLM_VERSION=v0.46.0
OPM_VERSION=v1.73.0
OPERATOR_SDK_VERSION=v1.42.3
COREDNS_VERSION=v1.15.0      # the real node's cluster DNS, run as a pod
OPERATOR_CONTROLLER_VERSION=v1.11.0  # OLM v1: its CRD upgrade-safety preflight is check-upgrade's oracle
GRPC_HEALTH_PROBE_VERSION=v0.4.62    # the probe OLM's registry pods exec, in the opm-based oracle catalog image
CATALOGD_VERSION=$OPERATOR_CONTROLLER_VERSION  # OLM v1's catalogd (same module): the oracle of the HTTP view
OLM_V1_VERSION=v1.5.1  # OLM v1 that installs: operator-controller and catalogd of one release (see build_olm_v1)
# operator-controller's own program (cmd/operator-controller) is not built: v1.11.0 imports
# pkg.package-operator.run/boxcutter (its tracking cache is used on every path, not only under
# the BoxcutterRuntime gate), and the Go module proxy refuses that module (403 for v0.10.0
# through v0.16.0). The newest release the proxy serves without it is v1.5.1.
# cert-manager, OLM v1's certificate provider for bundles with webhooks. v1.11.5 is the newest
# release whose programs are in the root module: from v1.12 on each lives in a module of its
# own (github.com/cert-manager/cert-manager/cmd/controller, ...), which the Go module proxy
# does not serve (404 for every version tried, v1.12.17 to v1.19.2).
CERT_MANAGER_VERSION=v1.11.5
HELM_VERSION=v3.21.4         # renders cert-manager's chart into its static manifest, as its release does

ASSET_CACHE=${ASSET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redis-olm-toolchain/assets}
mkdir -p "$ASSET_CACHE"

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go >= 1.26 is needed to build the test control plane (kube-apiserver, etcd, kwok, OLM, opm)." >&2
  echo "       Install Go 1.26 or newer and put it on PATH, or set KUBEBUILDER_ASSETS and ASSET_CACHE to prebuilt binaries." >&2
  exit 1
fi
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "${go_minor:-0}" -lt 26 ]; then
  echo "error: Go $(go env GOVERSION) is too old; the pinned tools need Go >= 1.26." >&2
  exit 1
fi

export CGO_ENABLED=0
export GOFLAGS=-buildvcs=false
# The module proxy and build cache are shared with the user's Go, so warm caches help both.

log() { printf '[build-go-assets] %s\n' "$*" >&2; }

# With GO_ASSETS_BUILT_DIR (tests/run-all.sh), a file named after each program is made there
# once it is in the cache, built now or before: tests/run-test-binaries.sh starts each test job
# as soon as the programs it needs are there.
built() {
  if [ -n "${GO_ASSETS_BUILT_DIR:-}" ]; then
    mkdir -p "$GO_ASSETS_BUILT_DIR"
    touch "$GO_ASSETS_BUILT_DIR/$1"
  fi
}

# done_or_build NAME VERSION FUNC: runs FUNC in a scratch dir unless the cache entry is complete.
done_or_build() {
  local name=$1 version=$2 func=$3
  local dest="$ASSET_CACHE/$name-$version"
  if [ -f "$dest/.complete" ]; then
    built "$name"
    return 0
  fi
  log "building $name $version (first run only) ..."
  local start=$SECONDS
  rm -rf "$dest.tmp"
  mkdir -p "$dest.tmp/bin"
  local work status
  work=$(mktemp -d)
  # The subshell gets its own `set -e`: on the left of `||` bash would ignore failures inside.
  set +e
  ( set -e; cd "$work"; "$func" "$dest.tmp" )
  status=$?
  set -e
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then
    log "building $name $version failed (exit $status)"
    exit 1
  fi
  touch "$dest.tmp/.complete"
  rm -rf "$dest"
  mv "$dest.tmp" "$dest"
  log "built $name $version in $((SECONDS - start))s"
  built "$name"
}

# wrapper_build MODULE VERSION TAGS LDFLAGS OUT PACKAGE...: builds packages of MODULE@VERSION
# through a throwaway module that requires it. `go install pkg@version` would be simpler, but
# it asks the proxy for the module's version list (for deprecation notices), which the proxy
# refuses for some of these modules; the exact version itself is served.
wrapper_build() {
  local module=$1 version=$2 tags=$3 ldflags=$4 out=$5
  shift 5
  printf 'module local/assets\n\ngo 1.26\n\nrequire %s %s\n' "$module" "$version" > go.mod
  # Extra `replace` lines, one per line, for dependencies the proxy does not serve.
  if [ -n "${WRAPPER_REPLACES:-}" ]; then
    printf '%s\n' "$WRAPPER_REPLACES" | sed 's/^/replace /' >> go.mod
  fi
  local p
  for p in "$@"; do go get -tool "$p@$version"; done
  go build -tags "$tags" -ldflags "$ldflags" -o "$out/bin/" "$@"
}

module_dir() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }
module_gomod() { go mod download -json "$1" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p'; }

build_kubernetes() {
  local out=$1
  # k8s.io/kubernetes replaces its staging modules with ./staging paths, which a
  # dependent module cannot follow: point each at its published v0.x release instead.
  local upstream
  upstream=$(module_gomod "k8s.io/kubernetes@$K8S_VERSION")
  {
    echo "module local/kubernetes-assets"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$upstream" \
      | awk -v v="$K8S_STAGING_VERSION" '{ printf "replace %s => %s %s\n", $1, $1, v }'
  } > go.mod
  # One `go build` for every command: they share most packages, which then compile once.
  local cmds="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl"
  # An explicit @version on each: a bare `go get` would upgrade to the newest release.
  local c
  for c in $cmds; do go get -tool "$c@$K8S_VERSION"; done
  local minor
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  # Without these the apiserver reports v0.0.0-master, and OLM's minKubeVersion check fails.
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  # shellcheck disable=SC2086
  go build -ldflags "$ldflags" -o "$out/bin/" $cmds
}

build_etcd() {
  local out=$1
  # etcd's server module replaces its siblings with relative paths: require them all at one version.
  cat > go.mod <<GOMOD
module local/etcd-assets

go 1.26

require (
	go.etcd.io/etcd/server/v3 $ETCD_VERSION
	go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
GOMOD
  go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go build -ldflags "-s -w" -o "$out/bin/etcd" go.etcd.io/etcd/server/v3
}

build_kwok() {
  local out=$1
  wrapper_build sigs.k8s.io/kwok "$KWOK_VERSION" "" "-s -w" "$out" sigs.k8s.io/kwok/cmd/kwok
  # The standalone kwok needs its Stage definitions passed in; take the "fast" ones from the
  # same module release rather than keeping copies in the repository.
  local src
  src=$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")
  mkdir -p "$out/stages"
  local f
  # The set kwokctl uses: node-initialize, node heartbeat with a Lease (without it the node
  # lifecycle controller marks nodes NotReady after ~40 s and pods flap), and the pod stages.
  for f in "$src"/kustomize/stage/node/fast/*.yaml "$src"/kustomize/stage/node/heartbeat-with-lease/*.yaml \
           "$src"/kustomize/stage/pod/fast/*.yaml; do
    case $(basename "$f") in kustomization.yaml) continue ;; esac
    cp "$f" "$out/stages/"
  done
  chmod -R u+w "$out/stages"
}

build_olm() {
  local out=$1
  wrapper_build github.com/operator-framework/operator-lifecycle-manager "$OLM_VERSION" containers_image_openpgp "-s -w" "$out" \
    github.com/operator-framework/operator-lifecycle-manager/cmd/olm \
    github.com/operator-framework/operator-lifecycle-manager/cmd/catalog \
    github.com/operator-framework/operator-lifecycle-manager/cmd/package-server \
    github.com/operator-framework/operator-lifecycle-manager/cmd/copy-content \
    github.com/operator-framework/operator-lifecycle-manager/util/cpb
  local src
  src=$(module_dir "github.com/operator-framework/operator-lifecycle-manager@$OLM_VERSION")
  mkdir -p "$out/crds" "$out/deploy"
  cp "$src"/deploy/chart/crds/*.yaml "$out/crds/"
  # What an admin applies to install OLM (the release's quickstart): the tests deploy it as
  # written, with the images swapped for ones built from these binaries.
  cp "$src"/deploy/upstream/quickstart/olm.yaml "$src"/deploy/upstream/quickstart/crds.yaml "$out/deploy/"
  chmod -R u+w "$out/crds" "$out/deploy"
}

build_opm() {
  local out=$1
  wrapper_build github.com/operator-framework/operator-registry "$OPM_VERSION" containers_image_openpgp \
    "-s -w -X github.com/operator-framework/operator-registry/cmd/opm/version.gitCommit=$OPM_VERSION -X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$OPM_VERSION" \
    "$out" github.com/operator-framework/operator-registry/cmd/opm
}

build_grpc_health_probe() {
  local out=$1
  wrapper_build github.com/grpc-ecosystem/grpc-health-probe "$GRPC_HEALTH_PROBE_VERSION" "" "-s -w" "$out" github.com/grpc-ecosystem/grpc-health-probe
}

build_coredns() {
  local out=$1
  # CoreDNS's own start-up (coremain) with only the plugins the real node's Corefile names
  # (tests/src/node/dns.rs), as CoreDNS documents for a build with a chosen plugin set. The
  # module root's main imports all ~60 plugins, and with them the cloud providers' SDKs
  # (route53, azure, clouddns), dnstap, etcd and the tracing clients: most of its build time.
  printf 'module local/coredns-assets\n\ngo 1.26\n\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION" > go.mod
  cat > main.go <<'GO'
// The real node's cluster DNS: CoreDNS with the plugins its Corefile uses.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() { coremain.Run() }
GO
  go mod tidy
  go build -ldflags "-s -w" -o "$out/bin/coredns" .
  # The plugins are what the Corefile needs, or CoreDNS would refuse it at start-up.
  "$out/bin/coredns" -plugins > plugins.txt
  local plugin
  for plugin in cache errors health kubernetes loadbalance ready reload; do
    grep -qx "$plugin" plugins.txt || { echo "coredns lacks the plugin $plugin" >&2; cat plugins.txt >&2; return 1; }
  done
}

build_operator_sdk() {
  local out=$1
  # operator-sdk v1.42.3 requires ansible-operator-plugins v1.42.3, which the Go module proxy
  # refuses to serve (403); v1.42.2 is served. The Ansible plugin only scaffolds Ansible
  # projects and plays no part in `bundle validate`, the only command the tests use.
  WRAPPER_REPLACES="github.com/operator-framework/ansible-operator-plugins => github.com/operator-framework/ansible-operator-plugins v1.42.2" \
  wrapper_build github.com/operator-framework/operator-sdk "$OPERATOR_SDK_VERSION" containers_image_openpgp \
    "-s -w -X github.com/operator-framework/operator-sdk/internal/version.Version=$OPERATOR_SDK_VERSION -X github.com/operator-framework/operator-sdk/internal/version.GitVersion=$OPERATOR_SDK_VERSION -X github.com/operator-framework/operator-sdk/internal/version.KubernetesVersion=$K8S_VERSION" \
    "$out" github.com/operator-framework/operator-sdk/cmd/operator-sdk
}

# The preflight lives in an `internal/` package of operator-controller, which no other module
# may import: the oracle's main package is placed inside a copy of the module (its own go.mod
# and go.sum pin crdify and every dependency) and built there.
build_crd_preflight() {
  local out=$1
  local src
  src=$(module_dir "github.com/operator-framework/operator-controller@$OPERATOR_CONTROLLER_VERSION")
  cp -r "$src" module
  chmod -R u+w module
  mkdir -p module/cmd/crd-preflight-oracle
  cat > module/cmd/crd-preflight-oracle/main.go <<'GO'
// crd-preflight-oracle runs operator-controller's CRD upgrade-safety preflight (its default
// configuration, as an upgrade runs it) on pairs of CRD files: each argument is a folder with
// old.yaml (the CRD on the cluster) and new.yaml (the one upgraded to). One JSON line per
// pair: {"pair": folder name, "error": the preflight's error text, "" when it passes}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/operator-framework/operator-controller/internal/operator-controller/rukpak/preflights/crdupgradesafety"
)

func read(path string) *apiextensionsv1.CustomResourceDefinition {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		os.Exit(1)
	}
	return crd
}

func main() {
	out := json.NewEncoder(os.Stdout)
	for _, dir := range os.Args[1:] {
		old := read(filepath.Join(dir, "old.yaml"))
		updated := read(filepath.Join(dir, "new.yaml"))
		// What the API server does once the old CRD exists: its storage version is stored.
		for _, version := range old.Spec.Versions {
			if version.Storage && !slices.Contains(old.Status.StoredVersions, version.Name) {
				old.Status.StoredVersions = append(old.Status.StoredVersions, version.Name)
			}
		}
		crds := fake.NewSimpleClientset(old).ApiextensionsV1().CustomResourceDefinitions()
		err := crdupgradesafety.NewPreflight(crds).Upgrade(context.Background(), []client.Object{updated})
		result := map[string]string{"pair": filepath.Base(dir), "error": ""}
		if err != nil {
			result["error"] = err.Error()
		}
		if err := out.Encode(result); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
GO
  (cd module && go build -ldflags "-s -w" -o "$out/bin/" ./cmd/crd-preflight-oracle)
  chmod -R u+w module
}

# OLM v0's own refusals when it updates a CRD, as the catalog operator's CRD step makes them:
# existing custom resources validated against the new schema (an unexported function of
# package catalog) and the stored-version check (pkg/lib/crd). A one-line file added to a copy
# of the module exports the function to the oracle's main package, built there with the
# module's own go.mod and go.sum.
build_olm_crd_oracle() {
  local out=$1
  local src
  src=$(module_dir "github.com/operator-framework/operator-lifecycle-manager@$OLM_VERSION")
  cp -r "$src" module
  chmod -R u+w module
  rm -rf module/vendor
  cat > module/pkg/controller/operators/catalog/zz_oracle_export.go <<'GO'
package catalog

// ValidateV1CRDCompatibilityOracle is validateV1CRDCompatibility, for olm-crd-oracle only.
var ValidateV1CRDCompatibilityOracle = validateV1CRDCompatibility
GO
  mkdir -p module/cmd/olm-crd-oracle
  cat > module/cmd/olm-crd-oracle/main.go <<'GO'
// olm-crd-oracle runs OLM v0's checks before it updates a CRD on pairs of CRD files: each
// argument is a folder with old.yaml (the CRD on the cluster; its storage version is added to
// status.storedVersions, as the API server does), new.yaml, and objects.yaml (the existing
// custom resources, YAML documents, listed through a fake dynamic client). One JSON line per
// folder: {"pair", "validation": the existing-CR validation error, "storage": the stored
// version error; "" when it passes}.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/operators/catalog"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/lib/crd"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func readCRD(path string) *apiextensionsv1.CustomResourceDefinition {
	data, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	out := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, out); err != nil {
		fail("%s: %v", path, err)
	}
	return out
}

func readObjects(path string) []runtime.Object {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		fail("%v", err)
	}
	// Decoded as the API server's objects are (Unstructured's JSON scheme: whole numbers int64).
	var objects []runtime.Object
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return objects
		} else if err != nil {
			fail("%s: %v", path, err)
		}
		jsonDoc, err := yaml.YAMLToJSON(doc)
		if err != nil {
			fail("%s: %v", path, err)
		}
		if trimmed := bytes.TrimSpace(jsonDoc); len(trimmed) == 0 || string(trimmed) == "null" {
			continue
		}
		object := &unstructured.Unstructured{}
		if err := object.UnmarshalJSON(jsonDoc); err != nil {
			fail("%s: %v", path, err)
		}
		objects = append(objects, object)
	}
}

func main() {
	out := json.NewEncoder(os.Stdout)
	for _, dir := range os.Args[1:] {
		old := readCRD(filepath.Join(dir, "old.yaml"))
		updated := readCRD(filepath.Join(dir, "new.yaml"))
		for _, version := range old.Spec.Versions {
			if version.Storage && !slices.Contains(old.Status.StoredVersions, version.Name) {
				old.Status.StoredVersions = append(old.Status.StoredVersions, version.Name)
			}
		}
		lists := map[schema.GroupVersionResource]string{}
		for _, version := range old.Spec.Versions {
			gvr := schema.GroupVersionResource{Group: old.Spec.Group, Version: version.Name, Resource: old.Spec.Names.Plural}
			lists[gvr] = old.Spec.Names.Kind + "List"
		}
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, readObjects(filepath.Join(dir, "objects.yaml"))...)
		result := map[string]string{"pair": filepath.Base(dir), "validation": "", "storage": ""}
		if err := catalog.ValidateV1CRDCompatibilityOracle(client, old, updated); err != nil {
			result["validation"] = err.Error()
		}
		if safe, err := crd.SafeStorageVersionUpgrade(old, updated); !safe && err != nil {
			result["storage"] = err.Error()
		}
		if err := out.Encode(result); err != nil {
			fail("%v", err)
		}
	}
}
GO
  (cd module && go build -mod=mod -ldflags "-s -w" -o "$out/bin/" ./cmd/olm-crd-oracle)
  chmod -R u+w module
}

# OLM v1's catalog server, from the operator-controller module (cmd/catalogd is a public main
# package), with the ClusterCatalog CRD of the same release: the chart's standard feature set
# (helm/olmv1/base/catalogd/crd/standard, plain YAML the chart includes as it is).
build_catalogd() {
  local out=$1
  wrapper_build github.com/operator-framework/operator-controller "$CATALOGD_VERSION" containers_image_openpgp "-s -w" "$out" \
    github.com/operator-framework/operator-controller/cmd/catalogd
  local src
  src=$(module_dir "github.com/operator-framework/operator-controller@$CATALOGD_VERSION")
  mkdir -p "$out/crds" "$out/manifests"
  cp "$src"/helm/olmv1/base/catalogd/crd/standard/olm.operatorframework.io_clustercatalogs.yaml "$out/crds/"
  # The release's install manifest as the module has it (its Helm chart rendered with the
  # standard feature set): OLM v1 on the real node is deployed from it.
  cp "$src"/manifests/standard.yaml "$out/manifests/"
  chmod -R u+w "$out/crds" "$out/manifests"
}

# OLM v1 as an admin installs it: operator-controller and catalogd from one release, the
# combination upstream tests, with the release's pre-rendered experimental manifest (the one
# whose operator-controller runs with WebhookProviderCertManager and PreflightPermissions on;
# our bundle has a conversion webhook). v1.5.1 is the newest release the module proxy can
# build: v1.6.0 imports pkg.package-operator.run/boxcutter, which the proxy refuses.
build_olm_v1() {
  local out=$1
  wrapper_build github.com/operator-framework/operator-controller "$OLM_V1_VERSION" containers_image_openpgp "-s -w" "$out" \
    github.com/operator-framework/operator-controller/cmd/operator-controller \
    github.com/operator-framework/operator-controller/cmd/catalogd
  local src
  src=$(module_dir "github.com/operator-framework/operator-controller@$OLM_V1_VERSION")
  mkdir -p "$out/manifests"
  cp "$src"/manifests/experimental.yaml "$out/manifests/"
  chmod -R u+w "$out/manifests"
}

build_helm() {
  local out=$1
  wrapper_build helm.sh/helm/v3 "$HELM_VERSION" "" "-s -w" "$out" helm.sh/helm/v3/cmd/helm
}

# cert-manager's controller, cainjector and webhook, and its static manifest made the way its
# release makes cert-manager.yaml (make/manifests.mk): the chart with the CRDs of deploy/crds
# as templates/crds.yaml, version and appVersion set, `helm template` with installCRDs,
# creator=static and no startupapicheck, after deploy/manifests/namespace.yaml.
build_cert_manager() {
  local out=$1
  wrapper_build github.com/cert-manager/cert-manager "$CERT_MANAGER_VERSION" "" "-s -w" "$out" \
    github.com/cert-manager/cert-manager/cmd/controller \
    github.com/cert-manager/cert-manager/cmd/cainjector \
    github.com/cert-manager/cert-manager/cmd/webhook
  local src chart
  src=$(module_dir "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION")
  chart=$PWD/chart/cert-manager
  mkdir -p "$chart/templates"
  cp "$src"/deploy/charts/cert-manager/templates/* "$chart/templates/"
  cp "$src"/deploy/charts/cert-manager/values.yaml "$chart/"
  sed -e "s/^version: .*/version: $CERT_MANAGER_VERSION/" -e "s/^appVersion: .*/appVersion: $CERT_MANAGER_VERSION/" \
    "$src"/deploy/charts/cert-manager/Chart.template.yaml > "$chart/Chart.yaml"
  {
    echo '{{- if .Values.installCRDs }}'
    local crd
    for crd in "$src"/deploy/crds/*.yaml; do
      echo '---'
      cat "$crd"
    done
    echo '{{- end }}'
  } > "$chart/templates/crds.yaml"
  chmod -R u+w chart
  mkdir -p "$out/manifests"
  {
    cat "$src"/deploy/manifests/namespace.yaml
    echo '---'
    "$ASSET_CACHE/helm-$HELM_VERSION/bin/helm" template --kube-version="$K8S_VERSION" --api-versions="" --namespace=cert-manager \
      --set=installCRDs=true --set=creator=static --set=startupapicheck.enabled=false cert-manager "$chart"
  } > "$out/manifests/cert-manager.yaml"
}

# The cache keys: a suffix marks a change of recipe, so that an old entry is built again.
# "+node": kubelet, kube-proxy and kubectl joined the build.
K8S_KEY="$K8S_VERSION+node"
# "+lease": the recipe changed (heartbeat stage added).
KWOK_KEY="$KWOK_VERSION+lease"
# "+images": package-server, copy-content, cpb and the quickstart manifests joined the build
# (OLM runs as pods on the real node).
OLM_KEY="$OLM_VERSION+images"
# "+plugins": built with the Corefile's plugins only.
COREDNS_KEY="$COREDNS_VERSION+plugins"
# "+manifests": standard.yaml joined the entry.
CATALOGD_KEY="$CATALOGD_VERSION+manifests"

# One line per component, read by the Rust harness (tests/src/assets.rs). Every path is known
# before anything is built; a component not built yet is a missing program to the tests.
write_index() {
  cat > "$ASSET_CACHE/index.env.new" <<INDEX
ETCD=$ASSET_CACHE/etcd-$ETCD_VERSION
KUBERNETES=$ASSET_CACHE/kubernetes-$K8S_KEY
KUBERNETES_VERSION=$K8S_VERSION
KWOK=$ASSET_CACHE/kwok-$KWOK_KEY
OLM=$ASSET_CACHE/olm-$OLM_KEY
OPM=$ASSET_CACHE/opm-$OPM_VERSION
OPERATOR_SDK=$ASSET_CACHE/operator-sdk-$OPERATOR_SDK_VERSION
COREDNS=$ASSET_CACHE/coredns-$COREDNS_KEY
CRD_PREFLIGHT=$ASSET_CACHE/crd-preflight-$OPERATOR_CONTROLLER_VERSION
OLM_CRD_ORACLE=$ASSET_CACHE/olm-crd-oracle-$OLM_VERSION
GRPC_HEALTH_PROBE=$ASSET_CACHE/grpc-health-probe-$GRPC_HEALTH_PROBE_VERSION
CATALOGD=$ASSET_CACHE/catalogd-$CATALOGD_KEY
CERT_MANAGER=$ASSET_CACHE/cert-manager-$CERT_MANAGER_VERSION
OLM_V1=$ASSET_CACHE/olm-v1-$OLM_V1_VERSION
INDEX
  mv "$ASSET_CACHE/index.env.new" "$ASSET_CACHE/index.env"
}

# The index first: every path in it is known before anything is built, and a test job whose
# programs are built may start while the others build.
write_index
# First the programs of the clusters: the control plane, the real node, OLM v0 and opm (the
# longest test job needs only these).
done_or_build etcd "$ETCD_VERSION" build_etcd
done_or_build kubernetes "$K8S_KEY" build_kubernetes
done_or_build kwok "$KWOK_KEY" build_kwok
done_or_build olm "$OLM_KEY" build_olm
done_or_build opm "$OPM_VERSION" build_opm
done_or_build coredns "$COREDNS_KEY" build_coredns
done_or_build grpc-health-probe "$GRPC_HEALTH_PROBE_VERSION" build_grpc_health_probe
# Then, in the order that starts the most test time soonest (tests/run-test-binaries.sh,
# needed_by): operator-sdk (~3 minutes to build; six jobs, ~10 minutes of them),
# OLM v1 v1.5.1 with cert-manager (~6 minutes; three jobs, ~9 minutes), catalogd v1.11.0
# (two jobs), the oracles.
done_or_build operator-sdk "$OPERATOR_SDK_VERSION" build_operator_sdk
done_or_build olm-v1 "$OLM_V1_VERSION" build_olm_v1
# helm renders cert-manager's manifest.
done_or_build helm "$HELM_VERSION" build_helm
done_or_build cert-manager "$CERT_MANAGER_VERSION" build_cert_manager
done_or_build catalogd "$CATALOGD_KEY" build_catalogd
done_or_build crd-preflight "$OPERATOR_CONTROLLER_VERSION" build_crd_preflight
done_or_build olm-crd-oracle "$OLM_VERSION" build_olm_crd_oracle
write_index
echo "$ASSET_CACHE"
