// AdmissionReview v1 in and out: the uid is echoed, denials carry a 403 status
// with the message, and malformed reviews are error values, never exceptions.
#include <gtest/gtest.h>

#include "webhook/admission_review.h"
#include "workload_fixture.h"

namespace plimsoll::webhook {
namespace {

using nlohmann::json;

TEST(AdmissionReview, EchoesUidAndCarriesTheDecision) {
  auto r = parse_admission_review(testing::review(json{{"kind", "Deployment"}}, "abc-1").dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->uid, "abc-1");
  EXPECT_EQ(r->operation, "CREATE");
  Decision d;
  d.allowed = false;
  d.message = "container x: does not fit";
  d.warnings = {"w1"};
  d.audit_annotations = {{"x.planned-bytes", "12"}};
  const json out = json::parse(admission_response(*r, d));
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], "abc-1");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 403);
  EXPECT_EQ(out["response"]["status"]["message"], "container x: does not fit");
  EXPECT_EQ(out["response"]["warnings"], json::array({"w1"}));
  EXPECT_EQ(out["response"]["auditAnnotations"]["x.planned-bytes"], "12");
}

TEST(AdmissionReview, AllowedResponsesHaveNoStatus) {
  auto r = parse_admission_review(testing::review(json{{"kind", "Service"}}).dump());
  ASSERT_TRUE(r.ok());
  const json out = json::parse(admission_response(*r, Decision{}));
  EXPECT_EQ(out["response"]["allowed"], true);
  EXPECT_FALSE(out["response"].contains("status"));
  EXPECT_FALSE(out["response"].contains("warnings"));
}

TEST(AdmissionReview, MalformedReviewsAreErrorsNamingTheProblem) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "not JSON"},
      {"{\"kind\":", "not JSON"},
      {"[1,2]", "not an AdmissionReview"},
      {R"({"kind":"Pod"})", "not an AdmissionReview"},
      {R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","request":{"uid":"a"}})", "v1beta1"},
      {R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"})", "no request"},
      {R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{}})", "uid"},
      {R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"a","object":7}})",
       "not an object"},
  };
  for (const auto& [body, why] : cases) {
    auto r = parse_admission_review(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.error().message.find(why), std::string::npos) << body << " -> " << r.error().message;
  }
}

TEST(AdmissionReview, LongWarningsAreClippedAndBadUtf8IsReplaced) {
  auto r = parse_admission_review(testing::review(json{{"kind", "Deployment"}}).dump());
  ASSERT_TRUE(r.ok());
  Decision d;
  d.warnings = {std::string(1000, 'w')};
  d.allowed = false;
  d.message = std::string("cut \xc3", 5);  // half a UTF-8 character
  const json out = json::parse(admission_response(*r, d));
  EXPECT_LE(out["response"]["warnings"][0].get<std::string>().size(), 250u);
}

}  // namespace
}  // namespace plimsoll::webhook
