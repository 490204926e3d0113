// AdmissionReview v1 on the wire: the request the API server posts to
// /validate, and the response that carries a Decision back.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "webhook/admission_policy.h"

namespace plimsoll::webhook {

struct AdmissionRequest {
  std::string api_version;  // echoed in the response ("admission.k8s.io/v1")
  std::string uid;          // echoed in the response
  std::string operation;    // CREATE, UPDATE, ...
  nlohmann::json object;    // the object as it would be stored (null on DELETE)
};

// Errors (kInvalidArgument) name what is wrong: not JSON, not an AdmissionReview, no uid.
Result<AdmissionRequest> parse_admission_review(std::string_view body);

// The AdmissionReview response for a decision: allowed, status (403 + message
// when denied), warnings and auditAnnotations.
std::string admission_response(const AdmissionRequest& request, const Decision& decision);

// {"error": message, "error_type": "validation"} for a review that cannot be read.
std::string error_json(const std::string& message);

}  // namespace plimsoll::webhook
