#!/usr/bin/env bash
# Prometheus rules: promtool check + unit tests (fire / do not fire), the tests
# must fail on a broken threshold, and the PrometheusRule carries the same groups.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${PLIMSOLL_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
rules=$root/deploy/prometheus
if ! command -v promtool >/dev/null; then
  echo "not run: promtool is not installed (Debian package prometheus; scripts/install-deps installs it)" >&2
  exit 77
fi
promtool check rules "$rules/plimsoll.rules.yaml"
promtool test rules "$rules/plimsoll.rules.test.yaml"

# The tests must bite: move each threshold and expect them to fail.
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for mutation in 's/ > 0.75$/ > 0.95/' 's/ > 0.80$/ > 0.95/' 's/reason="OOMKilled"/reason="Evicted"/' \
                's/>= on (namespace, horizontalpodautoscaler)/> on (namespace, horizontalpodautoscaler)/' \
                's/ > 0.05$/ > 0.5/' 's/ > 0.01$/ > 0.5/'; do
  cp "$rules/plimsoll.rules.test.yaml" "$work/"
  sed "$mutation" "$rules/plimsoll.rules.yaml" > "$work/plimsoll.rules.yaml"
  if cmp -s "$work/plimsoll.rules.yaml" "$rules/plimsoll.rules.yaml"; then
    echo "FAIL: mutation '$mutation' changed nothing" >&2; exit 1
  fi
  if promtool test rules "$work/plimsoll.rules.test.yaml" >/dev/null 2>&1; then
    echo "FAIL: the rule tests pass with '$mutation' applied" >&2; exit 1
  fi
  echo "ok   tests catch: $mutation"
done

# The PrometheusRule of the kustomize base has exactly the groups of the rules file.
python3 - "$rules/plimsoll.rules.yaml" "$root/deploy/kubernetes/base/prometheusrule.yaml" <<'PY'
import sys, yaml
a = yaml.safe_load(open(sys.argv[1]))["groups"]
b = yaml.safe_load(open(sys.argv[2]))["spec"]["groups"]
if a != b:
    sys.exit("FAIL: deploy/kubernetes/base/prometheusrule.yaml differs from the rules file")
print("ok   PrometheusRule groups = rules file")
PY
echo "rules: all checks passed"
