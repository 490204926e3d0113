// The endpoint picker's EndpointPickerConfig of the Gateway API Inference
// Extension v1.5.0, transcribed for validation (the EPP decodes the file strictly
// and each plugin's parameters with encoding/json, which ignores unknown names:
// a misspelt parameter would be silently dropped, so this refuses them).
// Sources, at tag v1.5.0: apix/config/v1alpha1/endpointpickerconfig_types.go (the
// document), cmd/epp/runner/runner.go (registered plugin types), and per plugin:
// framework/plugins/datalayer/source/metrics/datasource.go, .../extractor/metrics/
// factories.go (engineConfigParams, modelServerExtractorParams), .../flowcontrol/
// saturationdetector/utilization/config.go, .../scheduling/picker/common.go.
import Ajv from "ajv";

const closed = (properties, required = []) => ({ type: "object", properties, required, additionalProperties: false });
const str = { type: "string" };
const ref = closed({ pluginRef: str }, ["pluginRef"]);

// Plugin type -> its parameters (null: the plugin takes none). Only types
// registered by v1.5.0's runner may appear; those without a schema here are refused
// too, so using another one means transcribing its parameters first.
const PARAMETERS = {
  "metrics-data-source": closed({ scheme: { enum: ["http", "https"] }, path: str, insecureSkipVerify: { type: "boolean" } }),
  "core-metrics-extractor": closed({
    engineLabelKey: str,
    defaultEngine: str,
    engineConfigs: {
      type: "array",
      items: closed({
        name: str, queuedRequestsSpec: str, runningRequestsSpec: str, kvUsageSpec: str, loraSpec: str,
        cacheInfoSpec: str, cacheBlockSizeLabelName: str, cacheNumBlocksLabelName: str,
        cacheBlockSizeSpec: str, cacheNumBlocksSpec: str,
      }, ["name"]),
    },
  }),
  "utilization-detector": closed({
    queueDepthThreshold: { type: "integer", exclusiveMinimum: 0 },
    kvCacheUtilThreshold: { type: "number", exclusiveMinimum: 0, maximum: 1 },
    metricsStalenessThreshold: { type: "string", pattern: "^([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))+$" },
    headroom: { type: "number", minimum: 0 },
  }),
  "queue-scorer": null,
  "kv-cache-utilization-scorer": null,
  "running-requests-size-scorer": null,
  "max-score-picker": closed({ maxNumOfEndpoints: { type: "integer" } }),
  "random-picker": closed({ maxNumOfEndpoints: { type: "integer" } }),
  "single-profile-handler": null,
};

const DOCUMENT = closed({
  apiVersion: { const: "inference.networking.x-k8s.io/v1alpha1" },
  kind: { const: "EndpointPickerConfig" },
  featureGates: { type: "array", items: str },
  plugins: { type: "array", minItems: 1, items: closed({ name: str, type: { enum: Object.keys(PARAMETERS) }, parameters: {} }, ["type"]) },
  schedulingProfiles: {
    type: "array",
    items: closed({ name: str, plugins: { type: "array", items: closed({ pluginRef: str, weight: { type: "number" } }, ["pluginRef"]) } }, ["name", "plugins"]),
  },
  saturationDetector: closed({ pluginRef: str }),
  dataLayer: closed({ sources: { type: "array", items: closed({ pluginRef: str, extractors: { type: "array", items: ref } }, ["pluginRef", "extractors"]) } }, ["sources"]),
  flowControl: { type: "object" },
  parser: ref,
}, ["apiVersion", "kind", "plugins"]);

const ajv = new Ajv({ allErrors: true });
const checkDocument = ajv.compile(DOCUMENT);
const checkParameters = Object.fromEntries(
  Object.entries(PARAMETERS).map(([type, schema]) => [type, schema && ajv.compile(schema)]));

// Errors of one EndpointPickerConfig (parsed YAML): the document, each plugin's
// parameters, and that every pluginRef names a plugin instance.
export function validateEppConfig(cfg) {
  if (!checkDocument(cfg)) {
    return checkDocument.errors.map((e) => `EndpointPickerConfig${e.instancePath} ${e.message}${e.params?.additionalProperty ? ": " + e.params.additionalProperty : ""}`);
  }
  const errors = [];
  const names = new Set();
  for (const p of cfg.plugins) {
    names.add(p.name ?? p.type);
    const check = checkParameters[p.type];
    if (!check && p.parameters !== undefined) errors.push(`plugin ${p.type} takes no parameters`);
    if (check && p.parameters !== undefined && !check(p.parameters)) {
      for (const e of check.errors) errors.push(`plugin ${p.type} parameters${e.instancePath} ${e.message}${e.params?.additionalProperty ? ": " + e.params.additionalProperty : ""}`);
    }
  }
  const refs = [
    ...(cfg.schedulingProfiles ?? []).flatMap((s) => s.plugins.map((p) => p.pluginRef)),
    ...(cfg.dataLayer?.sources ?? []).flatMap((s) => [s.pluginRef, ...s.extractors.map((e) => e.pluginRef)]),
    ...(cfg.saturationDetector?.pluginRef ? [cfg.saturationDetector.pluginRef] : []),
    ...(cfg.parser ? [cfg.parser.pluginRef] : []),
  ];
  for (const r of refs) if (!names.has(r)) errors.push(`pluginRef ${r} names no plugin in plugins`);
  return errors;
}
