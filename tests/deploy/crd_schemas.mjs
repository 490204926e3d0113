// Validation of custom resources against the CRDs copied into crds/ (the
// Gateway API Inference Extension's, see crds/*/SOURCE.md), as the API server
// would: defaults applied, unknown fields refused (kubectl's default strict
// field validation), x-kubernetes-list-type uniqueness, and each
// x-kubernetes-validations CEL rule through a hand-written equivalent below.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv";
import { parseAllDocuments } from "yaml";

// CEL rule text (exactly as in the CRDs) -> the same predicate over the defaulted object.
// A CRD rule missing here fails validation: a new rule needs its equivalent.
const CEL_RULES = {
  "self.kind != 'Service' || has(self.port)": (self) => self.kind !== "Service" || self.port !== undefined,
  "self.all(p1, self.exists_one(p2, p1.number==p2.number))": (self) =>
    self.every((p1) => self.filter((p2) => p2.number === p1.number).length === 1),
};

// OpenAPI v3 (structural schema) -> JSON Schema for ajv.
function toJsonSchema(s) {
  if (Array.isArray(s)) return s.map(toJsonSchema);
  if (!s || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith("x-kubernetes-") || k === "nullable" || k === "description") continue;
    out[k] = ["properties", "patternProperties"].includes(k)
      ? Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, toJsonSchema(sub)]))
      : toJsonSchema(v);
  }
  if (s["x-kubernetes-int-or-string"]) return { anyOf: [{ type: "integer" }, { type: "string" }] };
  if (s.nullable && typeof out.type === "string") out.type = [out.type, "null"];
  if (out.type === "object" && out.properties && out.additionalProperties === undefined &&
      !s["x-kubernetes-preserve-unknown-fields"]) {
    out.additionalProperties = false;
  }
  return out;
}

// Walks schema and value together: CEL rules and list-type uniqueness.
function kubernetesRules(schema, value, path, errors) {
  if (value === undefined || value === null || !schema) return;
  for (const v of schema["x-kubernetes-validations"] ?? []) {
    const rule = CEL_RULES[v.rule];
    if (!rule) errors.push(`${path}: no equivalent for the CEL rule ${JSON.stringify(v.rule)} (add it to CEL_RULES)`);
    else if (!rule(value)) errors.push(`${path}: ${v.message ?? v.rule}`);
  }
  if (Array.isArray(value)) {
    const type = schema["x-kubernetes-list-type"];
    const key = (item) => type === "map"
      ? JSON.stringify((schema["x-kubernetes-list-map-keys"] ?? []).map((k) => item?.[k]))
      : JSON.stringify(item);
    if (type === "map" || type === "set") {
      const keys = value.map(key);
      if (new Set(keys).size !== keys.length) errors.push(`${path}: duplicate entries in a list of type ${type}`);
    }
    value.forEach((item, i) => kubernetesRules(schema.items, item, `${path}[${i}]`, errors));
  } else if (typeof value === "object") {
    for (const [name, sub] of Object.entries(schema.properties ?? {})) {
      kubernetesRules(sub, value[name], `${path}.${name}`, errors);
    }
  }
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

// "group/version/Kind" -> (obj) => errors, for every version each CRD in `dir` serves.
export function loadCrdValidators(dir) {
  const ajv = new Ajv({ strict: false, allErrors: true, useDefaults: true });
  for (const f of ["int32", "int64", "byte", "double", "float"]) ajv.addFormat(f, true);
  ajv.addFormat("date-time", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
  const validators = new Map();
  for (const sub of readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    for (const file of readdirSync(join(dir, sub.name)).filter((f) => f.endsWith(".yaml"))) {
      for (const doc of parseAllDocuments(readFileSync(join(dir, sub.name, file), "utf8"))) {
        const crd = doc.toJS();
        if (crd?.kind !== "CustomResourceDefinition") continue;
        for (const version of crd.spec.versions.filter((v) => v.served)) {
          const raw = version.schema.openAPIV3Schema;
          const check = ajv.compile(toJsonSchema(raw));
          validators.set(`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`, (obj) => {
            const errors = [];
            const name = obj.metadata?.name;
            if (typeof name !== "string" || name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
              errors.push(`metadata.name ${JSON.stringify(name)} is not a DNS subdomain`);
            }
            const copy = structuredClone(obj);
            if (!check(copy)) {
              for (const e of check.errors) errors.push(`${e.instancePath || "/"} ${e.message}${e.params?.additionalProperty ? ": " + e.params.additionalProperty : ""}`);
            } else {
              kubernetesRules(raw, copy, "", errors);
            }
            return errors;
          });
        }
      }
    }
  }
  return validators;
}
