# The endpoint picker's metric specs (the overlay's EndpointPickerConfig, engine
# `plimsoll`) against what a real `plimsoll serve` exports on /metrics: each named
# family exists as a gauge with a sample the spec's labels select, the KV figure
# is 0-1 and the cache-info sample carries integer block labels.
# Usage: check_epp_metrics.py RENDERED.yaml METRICS.txt
import re
import sys

import yaml

from manifest_invariants import check, epp_config, failures


def parse_exposition(text):
    """{family: (type, [(labels dict, value)])} from the Prometheus text format."""
    families = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            families[name] = (kind, [])
        elif line and not line.startswith("#"):
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
            name, labels = m.group(1), dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            family = next((f for f in (name, re.sub(r"_(bucket|sum|count)$", "", name)) if f in families), None)
            if family:
                families[family][1].append((labels, float(m.group(4))))
    return families


def parse_spec(spec):
    """'name{a=b,c="d"}' -> (name, {a: b, c: d}), the EPP's instant-vector selector syntax."""
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?$', spec.strip())
    labels = dict((k, v.strip('"')) for k, v in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)=("[^"]*"|[^,}]*)', m.group(3) or ""))
    return m.group(1), labels


def main(rendered, metrics_file):
    objs = [o for o in yaml.safe_load_all(open(rendered)) if o]
    _, _, cfg = epp_config(objs)
    extractor = next(p for p in cfg["plugins"] if p["type"] == "core-metrics-extractor")["parameters"]
    engine = next(e for e in extractor["engineConfigs"] if e["name"] == extractor["defaultEngine"])
    families = parse_exposition(open(metrics_file).read())
    for field in ("queuedRequestsSpec", "runningRequestsSpec", "kvUsageSpec", "cacheInfoSpec"):
        name, selector = parse_spec(engine[field])
        kind, samples = families.get(name, (None, []))
        chosen = [(labels, v) for labels, v in samples if all(labels.get(k) == v for k, v in selector.items())]
        check(kind == "gauge" and len(chosen) == 1, f"{field} {engine[field]}: one gauge sample on /metrics ({kind}, {len(chosen)})")
        if not chosen:
            continue
        labels, value = chosen[0]
        if field == "kvUsageSpec":
            check(0.0 <= value <= 1.0, f"{field}: {value} is within 0-1")
        if field == "cacheInfoSpec":
            for key in (engine.get("cacheBlockSizeLabelName") or "block_size", engine.get("cacheNumBlocksLabelName") or "num_gpu_blocks"):
                check(labels.get(key, "").isdigit() and int(labels[key]) > 0, f"{field}: label {key}={labels.get(key)} is a positive integer")
    check(engine.get("loraSpec", None) == "", "loraSpec is empty (Plimsoll serves no LoRA adapters)")
    print(f"{len(failures) == 0 and 'picker metrics found' or 'picker metrics missing'}: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
