# What the rendered manifests must promise beyond their schemas: probes, drain
# timing, non-root, the downward-API limit, HPA at 70 %, rules = rules file, and
# the inference gateway's wiring (pool -> servers, picker -> pool and its config).
import os
import sys
import yaml

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def check_server(d, overlay):
    pod = d["spec"]["template"]["spec"]
    c = next(c for c in pod["containers"] if c["name"] == "plimsoll")
    env = env_of(c)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        check(c.get(probe, {}).get("httpGet", {}).get("path") == "/health", f"{overlay}: {probe} on /health")
    graceful = int(env["PLIMSOLL_GRACEFUL_TIMEOUT"]["value"])
    pre_stop = c["lifecycle"]["preStop"]["exec"]["command"]
    sleep_s = int(pre_stop[1]) if pre_stop[0] == "sleep" else 0
    check(pod["terminationGracePeriodSeconds"] >= graceful + sleep_s,
          f"{overlay}: terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} >= graceful {graceful} + preStop {sleep_s}")
    ref = env["PLIMSOLL_MEMORY_LIMIT"].get("valueFrom", {}).get("resourceFieldRef", {})
    check(ref.get("resource") == "limits.memory", f"{overlay}: PLIMSOLL_MEMORY_LIMIT from the downward API (limits.memory)")
    sc = c["securityContext"]
    check(pod["securityContext"].get("runAsNonRoot") and sc.get("runAsNonRoot"), f"{overlay}: runs as non-root")
    check(sc.get("readOnlyRootFilesystem") is True, f"{overlay}: read-only root filesystem")
    res = c.get("resources", {})
    check(bool(res.get("limits", {}).get("memory")), f"{overlay}: has a memory limit")
    check(res.get("requests", {}).get("memory") == res.get("limits", {}).get("memory"),
          f"{overlay}: memory request = limit (HPA utilisation is a share of the limit)")
    check("--hostname=0.0.0.0" in c.get("args", []), f"{overlay}: --hostname given (HOSTNAME is the pod name)")


def check_hpa(h, overlay):
    mem = [m for m in h["spec"]["metrics"] if m.get("resource", {}).get("name") == "memory"]
    check(bool(mem) and mem[0]["resource"]["target"].get("averageUtilization") == 70, f"{overlay}: HPA memory target 70 %")
    check(h["spec"]["minReplicas"] < h["spec"]["maxReplicas"], f"{overlay}: HPA min < max replicas")
    check(h["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 300, f"{overlay}: HPA scale-down stabilised")


def check_webhook(w):
    check("cert-manager.io/inject-ca-from" in w["metadata"].get("annotations", {}), "webhook: cert-manager CA injection")
    for hook in w["webhooks"]:
        name = hook["name"]
        check(hook["failurePolicy"] in ("Fail", "Ignore"), f"webhook {name}: failurePolicy set")
        check(hook.get("timeoutSeconds", 10) <= 10, f"webhook {name}: timeout <= 10 s")
        check(hook["clientConfig"]["service"]["path"] == "/validate", f"webhook {name}: path /validate")
        check(hook["namespaceSelector"]["matchLabels"] == {"plimsoll.dev/webhook": "enabled"},
              f"webhook {name}: only namespaces labelled plimsoll.dev/webhook=enabled")
    resources = {r for hook in w["webhooks"] for rule in hook["rules"] for r in rule["resources"]}
    check({"deployments", "statefulsets", "configmaps"} <= resources, "webhook: deployments, statefulsets, configmaps")
    for hook in w["webhooks"]:
        if any("configmaps" in rule["resources"] for rule in hook["rules"]):
            exprs = hook.get("objectSelector", {}).get("matchExpressions", [])
            check({"key": "plimsoll.dev/tenants", "operator": "Exists"} in exprs,
                  f"webhook {hook['name']}: only ConfigMaps labelled plimsoll.dev/tenants")


def check_tenants(objs, overlay):
    """The tenants ConfigMap is labelled for the webhook, mounted where --tenants
    (PLIMSOLL_TENANTS) points, and copied into the pod's plimsoll.dev/tenants annotation."""
    server = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "plimsoll")
    pod = server["spec"]["template"]["spec"]
    c = next(c for c in pod["containers"] if c["name"] == "plimsoll")
    path = env_of(c).get("PLIMSOLL_TENANTS", {}).get("value", "")
    cms = [o for o in objs if o["kind"] == "ConfigMap" and "plimsoll.dev/tenants" in o["metadata"].get("labels", {})]
    check(len(cms) == 1 and "tenants.json" in cms[0].get("data", {}), f"{overlay}: one ConfigMap labelled plimsoll.dev/tenants with tenants.json")
    if not cms:
        return
    cm = cms[0]
    volume = next((v for v in pod.get("volumes", []) if v.get("configMap", {}).get("name") == cm["metadata"]["name"]), None)
    mount = next((m for m in c.get("volumeMounts", []) if volume and m["name"] == volume["name"]), None)
    check(mount is not None and path == mount["mountPath"] + "/tenants.json",
          f"{overlay}: PLIMSOLL_TENANTS {path} is the mounted ConfigMap {cm['metadata']['name']}'s tenants.json")
    annotation = server["spec"]["template"]["metadata"].get("annotations", {}).get("plimsoll.dev/tenants")
    check(annotation == cm["data"].get("tenants.json"), f"{overlay}: the plimsoll.dev/tenants annotation is the ConfigMap's tenants.json")


CRD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crds")


def epp_config(objs):
    """The EndpointPickerConfig in the overlay's ConfigMap, with the ConfigMap's name and key."""
    for o in objs:
        if o["kind"] == "ConfigMap":
            for key, text in o.get("data", {}).items():
                doc = yaml.safe_load(text)
                if isinstance(doc, dict) and doc.get("kind") == "EndpointPickerConfig":
                    return o["metadata"]["name"], key, doc
    return None, None, None


def check_inference_gateway(objs, overlay):
    """The pool selects the servers on their port, the picker serves that pool with
    the configuration it mounts, the route and objectives point at the pool, and the
    copied CRDs are of the picker image's release."""
    by = lambda kind: [o for o in objs if o["kind"] == kind]
    pool = by("InferencePool")[0]
    server = next(o for o in by("Deployment") if o["metadata"]["name"] == "plimsoll")
    epp = next(o for o in by("Deployment") if o["metadata"]["name"] == pool["spec"]["endpointPickerRef"]["name"])
    pod_labels = server["spec"]["template"]["metadata"]["labels"]
    wanted = pool["spec"]["selector"]["matchLabels"]
    check(all(pod_labels.get(k) == v for k, v in wanted.items()), f"{overlay}: the pool's selector {wanted} selects the server pods")
    ports = {p["containerPort"] for c in server["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
    check([p["number"] for p in pool["spec"]["targetPorts"]] == [3000] and 3000 in ports,
          f"{overlay}: the pool's target port is the server's container port 3000")
    service = next((o for o in by("Service") if o["metadata"]["name"] == pool["spec"]["endpointPickerRef"]["name"]), None)
    epp_pod = epp["spec"]["template"]["spec"]
    container = epp_pod["containers"][0]
    named = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    picker_port = pool["spec"]["endpointPickerRef"]["port"]["number"]
    service_port = next((p for p in (service or {}).get("spec", {}).get("ports", []) if p["port"] == picker_port), None)
    check(service_port is not None and named.get(service_port["targetPort"]) == 9002,
          f"{overlay}: endpointPickerRef {service and service['metadata']['name']}:{picker_port} reaches the picker's ext-proc port 9002")
    check(service is not None and all(epp["spec"]["template"]["metadata"]["labels"].get(k) == v
                                      for k, v in service["spec"]["selector"].items()),
          f"{overlay}: the picker's Service selects the picker pod")
    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"] if "=" in a)
    check(args.get("pool-name") == pool["metadata"]["name"], f"{overlay}: the picker serves the pool ({args.get('pool-name')})")
    check(not any(a in args for a in ("total-queued-requests-metric", "total-running-requests-metric",
                                      "kv-cache-usage-percentage-metric", "lora-info-metric", "cache-info-metric")),
          f"{overlay}: no deprecated metric flags (v1.5.0 refuses them)")
    cm_name, key, cfg = epp_config(objs)
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
    volume = next((v for v in epp_pod.get("volumes", []) if v.get("configMap", {}).get("name") == cm_name), None)
    check(volume is not None and args.get("config-file") == f"{mounts.get(volume['name'])}/{key}",
          f"{overlay}: --config-file {args.get('config-file')} is the mounted EndpointPickerConfig")
    extractor = next(p for p in cfg["plugins"] if p["type"] == "core-metrics-extractor")["parameters"]
    engines = {e["name"] for e in extractor["engineConfigs"]}
    check(extractor.get("defaultEngine") in engines and
          pod_labels.get("inference.networking.k8s.io/engine-type") in engines,
          f"{overlay}: the server pods' engine ({pod_labels.get('inference.networking.k8s.io/engine-type')}, default {extractor.get('defaultEngine')}) has a metric config")
    for route in by("HTTPRoute"):
        refs = [b for r in route["spec"]["rules"] for b in r["backendRefs"]]
        check(all(b.get("kind") == "InferencePool" and b.get("group") == "inference.networking.k8s.io" and
                  b["name"] == pool["metadata"]["name"] for b in refs), f"{overlay}: HTTPRoute {route['metadata']['name']} routes to the pool")
    objectives = by("InferenceObjective")
    check(bool(objectives) and all(o["spec"]["poolRef"]["name"] == pool["metadata"]["name"] for o in objectives),
          f"{overlay}: {len(objectives)} InferenceObjective(s) name the pool")
    tag = container["image"].rsplit(":", 1)[1]
    versions = set()
    for root, _, names in os.walk(CRD_DIR):
        for n in names:
            if n.endswith(".yaml"):
                crd = yaml.safe_load(open(os.path.join(root, n)))
                versions.add(crd["metadata"]["annotations"]["inference.networking.k8s.io/bundle-version"])
    check(versions == {tag}, f"{overlay}: the copied CRDs ({sorted(versions)}) are of the picker's release {tag}")


def main(rules_file, files):
    rules = yaml.safe_load(open(rules_file))
    for f in files:
        overlay = f.rsplit("/", 1)[-1].removesuffix(".yaml")
        objs = [o for o in yaml.safe_load_all(open(f)) if o]
        kinds = {o["kind"] for o in objs}
        for o in objs:
            if o["kind"] == "Deployment" and o["metadata"]["name"] == "plimsoll":
                check_server(o, overlay)
            elif o["kind"] == "HorizontalPodAutoscaler":
                check_hpa(o, overlay)
            elif o["kind"] == "PrometheusRule":
                check(o["spec"]["groups"] == rules["groups"], f"{overlay}: PrometheusRule = {rules_file}")
            elif o["kind"] == "ValidatingWebhookConfiguration":
                check_webhook(o)
        if any(o["kind"] == "ConfigMap" and "plimsoll.dev/tenants" in o["metadata"].get("labels", {}) for o in objs):
            check_tenants(objs, overlay)
        if "InferencePool" in kinds:
            check_inference_gateway(objs, overlay)
        if "Deployment" in kinds and overlay != "webhook":
            for kind in ("Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "PrometheusRule", "ServiceMonitor"):
                check(kind in kinds, f"{overlay}: has a {kind}")
    print(f"{len(failures) == 0 and 'invariants hold' or 'invariants broken'}: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
