# What the rendered manifests must promise beyond their schemas: probes, drain
# timing, non-root, the downward-API limit, HPA at 70 %, rules = rules file.
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
    hook = w["webhooks"][0]
    check(hook["failurePolicy"] in ("Fail", "Ignore"), "webhook: failurePolicy set")
    check(hook.get("timeoutSeconds", 10) <= 10, "webhook: timeout <= 10 s")
    check("cert-manager.io/inject-ca-from" in w["metadata"].get("annotations", {}), "webhook: cert-manager CA injection")
    check(hook["clientConfig"]["service"]["path"] == "/validate", "webhook: path /validate")


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
        if "Deployment" in kinds and overlay != "webhook":
            for kind in ("Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "PrometheusRule", "ServiceMonitor"):
                check(kind in kinds, f"{overlay}: has a {kind}")
    print(f"{len(failures) == 0 and 'invariants hold' or 'invariants broken'}: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
