#!/usr/bin/env bash
# Renders every kustomize overlay, validates each object against the Kubernetes
# OpenAPI schemas (and the inference extension's CRDs in crds/), checks the
# invariants, asks `plimsoll webhook` about them (servers and the tenants
# ConfigMap, as rendered and broken on purpose), and checks the endpoint picker's
# metric names against a real `plimsoll serve`'s /metrics.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${PLIMSOLL_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
k8s=$root/deploy/kubernetes
out=$(mktemp -d)
trap 'kill "${webhook_pid:-}" "${serve_pid:-}" 2>/dev/null || true; rm -rf "$out"' EXIT

if command -v kubectl >/dev/null && kubectl kustomize --help >/dev/null 2>&1; then
  render() { kubectl kustomize "$1"; }
elif command -v kustomize >/dev/null; then
  render() { kustomize build "$1"; }
else
  echo "not run: neither kubectl (with kustomize) nor kustomize is installed" >&2
  exit 77
fi
if ! command -v node >/dev/null; then echo "not run: node is not installed" >&2; exit 77; fi
if [ ! -d "$here/node_modules/kubernetes-models" ] || [ ! -d "$here/node_modules/@kubernetes-models/gateway-api" ]; then
  npm ci --prefix "$here" --no-audit --no-fund >&2
fi

echo "== render"
for overlay in overlays/cpu overlays/inference-gateway overlays/tenants webhook; do
  name=$(basename "$overlay")
  render "$k8s/$overlay" > "$out/$name.yaml"
  echo "rendered $overlay: $(grep -c '^kind:' "$out/$name.yaml") objects"
done

echo "== schemas"
node "$here/validate_manifests.mjs" "$out/cpu.yaml" "$out/inference-gateway.yaml" "$out/tenants.yaml" "$out/webhook.yaml"
echo "== the validator rejects broken objects"
if node "$here/validate_manifests.mjs" "$here/invalid/bad-objects.yaml" > "$out/bad.log"; then
  cat "$out/bad.log"; echo "FAIL: the validator accepted invalid objects" >&2; exit 1
fi
bad=$(grep -c '^FAIL' "$out/bad.log"); docs=$(grep -c '^kind:' "$here/invalid/bad-objects.yaml")
[ "$bad" = "$docs" ] || { cat "$out/bad.log"; echo "FAIL: $bad of $docs invalid objects rejected" >&2; exit 1; }
echo "all $docs invalid objects rejected"

echo "== invariants"
python3 "$here/manifest_invariants.py" "$root/deploy/prometheus/plimsoll.rules.yaml" \
  "$out/cpu.yaml" "$out/inference-gateway.yaml" "$out/tenants.yaml" "$out/webhook.yaml"

echo "== plimsoll webhook admits the rendered servers (certificates from make-certs.sh)"
binary=${PLIMSOLL_BINARY:-$root/build/release/plimsoll}
if [ ! -x "$binary" ]; then echo "FAIL: $binary is not built" >&2; exit 1; fi
bash "$k8s/webhook/make-certs.sh" --out "$out/certs" --days 1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$binary" webhook --hostname 127.0.0.1 --port "$port" --tls-cert "$out/certs/tls.crt" \
  --tls-key "$out/certs/tls.key" 2> "$out/webhook.log" &
webhook_pid=$!
host=plimsoll-webhook.plimsoll-system.svc
post() {
  curl -sS --fail-with-body --cacert "$out/certs/ca.crt" --resolve "$host:$port:127.0.0.1" \
    -H 'Content-Type: application/json' --data-binary @"$1" "https://$host:$port/validate"
}
for _ in $(seq 50); do
  curl -sf --cacert "$out/certs/ca.crt" --resolve "$host:$port:127.0.0.1" "https://$host:$port/healthz" >/dev/null && break
  sleep 0.2
done
for overlay in cpu inference-gateway tenants; do
  python3 - "$out/$overlay.yaml" > "$out/review-$overlay.json" <<'PY'
import json, sys, yaml
d = next(o for o in yaml.safe_load_all(open(sys.argv[1])) if o and o["kind"] == "Deployment" and o["metadata"]["name"] == "plimsoll")
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": "check-manifests", "operation": "CREATE", "object": d}}))
PY
  answer=$(post "$out/review-$overlay.json")
  python3 - "$overlay" "$answer" <<'PY'
import json, sys
r = json.loads(sys.argv[2])["response"]
audit = r.get("auditAnnotations", {})
print(f"{sys.argv[1]}: allowed={r['allowed']} planned={audit.get('plimsoll.planned-bytes')} tenants={audit.get('plimsoll.tenants')}")
for w in r.get("warnings", []):
    print(f"  warning: {w}")
if not r["allowed"] or "plimsoll.planned-bytes" not in audit or (sys.argv[1] == "tenants") != ("plimsoll.tenants" in audit):
    print(f"FAIL: {r.get('status')}")
    sys.exit(1)
PY
done
echo "== plimsoll webhook reviews the tenants file: the rendered ConfigMap and broken copies"
# Each case: an object from overlays/tenants (changed or not) and the answer wanted.
python3 - "$out/tenants.yaml" "$out" <<'PY'
import copy, json, sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
cm = next(o for o in objs if o["kind"] == "ConfigMap" and "plimsoll.dev/tenants" in o["metadata"].get("labels", {}))
server = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "plimsoll")
def review(name, obj, want):
    json.dump({"want": want, "review": {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "request": {"uid": name, "operation": "CREATE", "object": obj}}}, open(f"{sys.argv[2]}/case-{name}.json", "w"))
review("configmap", cm, {"allowed": True})
typo = copy.deepcopy(cm)
typo["data"]["tenants.json"] = typo["data"]["tenants.json"].replace('"max_kv_share"', '"max_kv_shares"')
review("configmap-typo", typo, {"allowed": False, "message": "key tenants.json: /tenants/1/max_kv_shares: unknown field"})
tiny = copy.deepcopy(server)
notes = tiny["spec"]["template"]["metadata"]["annotations"]
notes["plimsoll.dev/tenants"] = notes["plimsoll.dev/tenants"].replace('"max_kv_share": 0.25', '"max_kv_share": 0.0001')
review("server-tiny-share", tiny, {"allowed": False, "message": 'tenant "batch": max_kv_share 0.0001 of the plan'})
PY
for case in "$out"/case-*.json; do
  python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["review"]))' "$case" > "$case.review"
  answer=$(post "$case.review")
  python3 - "$case" "$answer" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))["want"]
r = json.loads(sys.argv[2])["response"]
message = r.get("status", {}).get("message", "")
print(f"{r['uid']}: allowed={r['allowed']} {message}")
if r["allowed"] != want["allowed"] or want.get("message", "") not in message:
    print(f"FAIL: wanted {want}")
    sys.exit(1)
PY
done
echo "== the endpoint picker's metric specs name what plimsoll serve exports"
model=$root/models/stories260K/stories260K.gguf
if [ ! -f "$model" ]; then echo "FAIL: $model is missing" >&2; exit 1; fi
serve_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$binary" serve --model "$model" --hostname 127.0.0.1 --port "$serve_port" --memory-limit 256Mi 2> "$out/serve.log" &
serve_pid=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$serve_port/health" >/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$out/serve.log"; echo "FAIL: plimsoll serve exited" >&2; exit 1; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$serve_port/metrics" > "$out/metrics.txt" || { cat "$out/serve.log"; exit 1; }
python3 "$here/check_epp_metrics.py" "$out/inference-gateway.yaml" "$out/metrics.txt"
echo "manifests: all checks passed"
