#!/usr/bin/env bash
# The manual certificate path (no cert-manager): a CA and a serving certificate
# for the webhook Service made with openssl; --apply stores them in the cluster.
set -euo pipefail
out=$(mktemp -d) apply=0 days=365
ns=plimsoll-system svc=plimsoll-webhook
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --apply) apply=1; shift ;;
    --days) days=$2; shift 2 ;;
    *) echo "usage: make-certs.sh [--out DIR] [--days N] [--apply]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -subj "/CN=plimsoll-webhook-ca" -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/CN=$svc.$ns.svc" -keyout "$out/tls.key" -out "$out/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local\nextendedKeyUsage=serverAuth\n' \
  "$svc" "$ns" "$svc" "$ns" > "$out/ext.cnf"
openssl x509 -req -in "$out/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
  -days "$days" -extfile "$out/ext.cnf" -out "$out/tls.crt" 2>/dev/null
echo "make-certs: wrote ca.crt, tls.crt, tls.key to $out" >&2
if [ "$apply" = 1 ]; then
  kubectl -n "$ns" create secret tls plimsoll-webhook-tls --cert "$out/tls.crt" --key "$out/tls.key" \
    --dry-run=client -o yaml | kubectl apply -f -
  ca=$(base64 -w0 < "$out/ca.crt")
  # Every entry of the configuration: memory-plan.plimsoll.dev (0) and tenants.plimsoll.dev (1).
  kubectl patch validatingwebhookconfiguration plimsoll-memory-plan --type=json -p \
    "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$ca\"},
      {\"op\":\"add\",\"path\":\"/webhooks/1/clientConfig/caBundle\",\"value\":\"$ca\"}]"
fi
