// Validates every object of multi-document YAML files against the Kubernetes
// OpenAPI schema of its apiVersion/kind (kubernetes-models' ajv validators), or
// against the CRDs copied into crds/ (crd_schemas.mjs). A ConfigMap holding an
// EndpointPickerConfig has that checked too (epp_config_schema.mjs).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, parseAllDocuments } from "yaml";
import { loadCrdValidators } from "./crd_schemas.mjs";
import { validateEppConfig } from "./epp_config_schema.mjs";

const crdValidators = loadCrdValidators(join(dirname(fileURLToPath(import.meta.url)), "crds"));

// apiVersion -> the package that ships its schemas (CRDs: the operator's own models).
function modulePath(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com") return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  if (group === "cert-manager.io") return `@kubernetes-models/cert-manager/${apiVersion}/${kind}`;
  if (group === "gateway.networking.k8s.io") return `@kubernetes-models/gateway-api/${apiVersion}/${kind}`;
  return group === "" ? `kubernetes-models/${version}/${kind}` : `kubernetes-models/${apiVersion}/${kind}`;
}

async function validateObject(obj) {
  if (!obj || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
    return ["not a Kubernetes object (apiVersion and kind are required)"];
  }
  const crd = crdValidators.get(`${obj.apiVersion}/${obj.kind}`);
  if (crd) return crd(obj);
  if (obj.apiVersion === "v1" && obj.kind === "ConfigMap") {
    const errors = [];
    for (const [key, text] of Object.entries(obj.data ?? {})) {
      let doc;
      try {
        doc = parse(text);
      } catch {
        continue;  // not YAML: not an endpoint picker's configuration
      }
      if (doc?.kind === "EndpointPickerConfig") errors.push(...validateEppConfig(doc).map((e) => `data.${key}: ${e}`));
    }
    if (errors.length) return errors;
  }
  let mod;
  try {
    mod = await import(modulePath(obj.apiVersion, obj.kind));
  } catch (e) {
    return [`no schema for ${obj.apiVersion} ${obj.kind}: ${e.message.split("\n")[0]}`];
  }
  const Model = mod[obj.kind];
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    return [e.message];
  }
}

let failures = 0, checked = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.log(`FAIL ${file}: YAML: ${doc.errors[0].message}`);
      failures++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null) continue;
    const errors = await validateObject(obj);
    const name = `${obj?.apiVersion} ${obj?.kind} ${obj?.metadata?.namespace ?? ""}/${obj?.metadata?.name ?? ""}`;
    checked++;
    if (errors.length) {
      failures++;
      console.log(`FAIL ${file}: ${name}:\n  ${errors.join("\n  ")}`);
    } else {
      console.log(`ok   ${name}`);
    }
  }
}
console.log(`${checked - failures} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
