// Deployments as the API server would send them, for the webhook's tests:
// a Llama-2-7B-shaped model declared by annotations, settings and resources.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace plimsoll::webhook::testing {

using nlohmann::json;

// Llama-2-7B: 32 layers, dim 4096, 32 heads, ffn 11008, vocab 32000, context 4096, Q8_0.
inline json llama7b_annotations() {
  return {{"plimsoll.dev/model-params", "6.74B"}, {"plimsoll.dev/model-dtype", "q8_0"},
          {"plimsoll.dev/model-layers", "32"},    {"plimsoll.dev/model-heads", "32"},
          {"plimsoll.dev/model-kv-heads", "32"},  {"plimsoll.dev/model-dim", "4096"},
          {"plimsoll.dev/model-ffn", "11008"},    {"plimsoll.dev/model-vocab", "32000"},
          {"plimsoll.dev/model-context", "4096"}, {"plimsoll.dev/node-cpus", "16"}};
}

inline json serve_container(const json& env, const json& resources, const json& args = json::array()) {
  return {{"name", "plimsoll"},
          {"image", "registry.example/plimsoll:0.1.0"},
          {"args", args},
          {"env", env},
          {"resources", resources}};
}

inline json memory(const std::string& request, const std::string& limit) {
  json r = json::object();
  if (!request.empty()) r["requests"] = {{"memory", request}, {"cpu", "4"}};
  if (!limit.empty()) r["limits"] = {{"memory", limit}, {"cpu", "8"}};
  return r;
}

inline json deployment(const json& container, const json& annotations = llama7b_annotations(),
                       const std::string& kind = "Deployment") {
  return {{"apiVersion", "apps/v1"},
          {"kind", kind},
          {"metadata", {{"name", "llm"}, {"namespace", "inference"}}},
          {"spec",
           {{"replicas", 2},
            {"selector", {{"matchLabels", {{"app", "llm"}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", "llm"}}}, {"annotations", annotations}}},
              {"spec", {{"containers", json::array({container})}}}}}}}};
}

inline json review(const json& object, const std::string& uid = "705ab4f5-6393-11e8-b7cc-42010a800002") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", uid},
            {"kind", {{"group", "apps"}, {"version", "v1"}, {"kind", object.value("kind", "")}}},
            {"resource", {{"group", "apps"}, {"version", "v1"}, {"resource", "deployments"}}},
            {"namespace", "inference"},
            {"operation", "CREATE"},
            {"userInfo", {{"username", "admin"}}},
            {"object", object},
            {"dryRun", false}}}};
}

}  // namespace plimsoll::webhook::testing
