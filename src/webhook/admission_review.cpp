// Parses and writes AdmissionReview v1 JSON; malformed input is an error
// value, never an exception.
#include "webhook/admission_review.h"

namespace plimsoll::webhook {
namespace {

using nlohmann::json;

Error invalid(const std::string& message) { return make_error(ErrorCode::kInvalidArgument, message); }

std::string string_field(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// The API server truncates long warnings; keep each under its 256-character bound.
std::string clip(const std::string& text) { return text.size() <= 250 ? text : text.substr(0, 247) + "..."; }

}  // namespace

Result<AdmissionRequest> parse_admission_review(std::string_view body) {
  const json review = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return invalid("the body is not JSON");
  if (!review.is_object() || string_field(review, "kind") != "AdmissionReview") {
    return invalid("the body is not an AdmissionReview (kind must be \"AdmissionReview\")");
  }
  AdmissionRequest r;
  r.api_version = string_field(review, "apiVersion");
  if (r.api_version != "admission.k8s.io/v1") {
    return invalid("apiVersion \"" + r.api_version + "\" is not admission.k8s.io/v1");
  }
  if (!review.contains("request") || !review["request"].is_object()) return invalid("the review has no request");
  const json& req = review["request"];
  r.uid = string_field(req, "uid");
  if (r.uid.empty()) return invalid("request.uid is missing");
  r.operation = string_field(req, "operation");
  if (req.contains("object")) r.object = req["object"];
  if (!r.object.is_null() && !r.object.is_object()) return invalid("request.object is not an object");
  return r;
}

std::string admission_response(const AdmissionRequest& request, const Decision& decision) {
  json response = {{"uid", request.uid}, {"allowed", decision.allowed}};
  if (!decision.allowed) {
    response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", decision.message}};
  }
  if (!decision.warnings.empty()) {
    json warnings = json::array();
    for (const std::string& w : decision.warnings) warnings.push_back(clip(w));
    response["warnings"] = warnings;
  }
  if (!decision.audit_annotations.empty()) response["auditAnnotations"] = decision.audit_annotations;
  const json review = {{"apiVersion", request.api_version}, {"kind", "AdmissionReview"}, {"response", response}};
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_json(const std::string& message) {
  return json{{"error", message}, {"error_type", "validation"}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace plimsoll::webhook
