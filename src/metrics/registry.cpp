// MetricsRegistry and Family: registration, label children and the text
// exposition format (HELP/TYPE lines, escaping, histogram buckets).
#include "metrics/registry.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace plimsoll::metrics {
namespace {

const char* type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

[[noreturn]] void registration_bug(std::string_view name, const char* why) {
  std::fprintf(stderr, "metrics: cannot register '%.*s': %s\n", static_cast<int>(name.size()),
               name.data(), why);
  std::abort();
}

bool name_char(char c, bool first, bool colon_ok) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

bool increasing_and_finite(std::span<const double> bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) return false;
    if (i > 0 && !(bounds[i] > bounds[i - 1])) return false;
  }
  return true;
}

}  // namespace

std::string escape_help(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_label_value(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"') out += "\\\"";
    else out += c;
  }
  return out;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

bool valid_metric_name(std::string_view name) { return valid_name(name, true); }

bool valid_label_name(std::string_view name) {
  return valid_name(name, false) && !(name.size() >= 2 && name.substr(0, 2) == "__");
}

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type),
      label_names_(std::move(label_names)) {}

std::string FamilyBase::label_text(const std::vector<std::string>& values,
                                   std::string_view extra) const {
  if (label_names_.empty() && extra.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < label_names_.size(); ++i) {
    if (i > 0) out += ',';
    out += label_names_[i];
    out += "=\"";
    out += escape_label_value(values[i]);
    out += '"';
  }
  if (!extra.empty()) {
    if (!label_names_.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

void FamilyBase::render_header(std::string* out) const {
  *out += "# HELP " + name_ + " " + escape_help(help_) + "\n";
  *out += "# TYPE " + name_ + " " + type_name(type_) + "\n";
}

template <typename M>
std::unique_ptr<M> Family<M>::make_child() const {
  if constexpr (std::is_same_v<M, Histogram>) {
    return std::make_unique<Histogram>(upper_bounds_);
  } else {
    return std::make_unique<M>();
  }
}

template <typename M>
M& Family<M>::labels(std::vector<std::string> values) {
  values.resize(label_names_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = children_.find(values);
  if (it == children_.end()) it = children_.emplace(std::move(values), make_child()).first;
  return *it->second;
}

template <typename M>
void Family<M>::render_child(const std::vector<std::string>& values, const M& metric,
                             std::string* out) const {
  if constexpr (std::is_same_v<M, Histogram>) {
    Histogram::Snapshot s = metric.snapshot();
    for (size_t i = 0; i <= s.upper_bounds.size(); ++i) {
      double bound = i < s.upper_bounds.size() ? s.upper_bounds[i] : INFINITY;
      std::string le = "le=\"" + format_value(bound) + "\"";
      *out += name_ + "_bucket" + label_text(values, le) + " " + format_value(double(s.cumulative[i])) + "\n";
    }
    *out += name_ + "_sum" + label_text(values) + " " + format_value(s.sum) + "\n";
    *out += name_ + "_count" + label_text(values) + " " + format_value(double(s.count)) + "\n";
  } else {
    *out += name_ + label_text(values) + " " + format_value(metric.value()) + "\n";
  }
}

template <typename M>
void Family<M>::render(std::string* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (children_.empty()) return;
  render_header(out);
  for (const auto& [values, metric] : children_) render_child(values, *metric, out);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

template <typename F>
F& MetricsRegistry::add(std::string_view name, std::string_view help, MetricType type,
                        std::vector<std::string> label_names,
                        std::span<const double> upper_bounds) {
  if (!valid_metric_name(name)) registration_bug(name, "invalid metric name");
  for (const std::string& label : label_names) {
    if (!valid_label_name(label) || (type == MetricType::kHistogram && label == "le")) {
      registration_bug(name, "invalid label name");
    }
  }
  if (!increasing_and_finite(upper_bounds)) registration_bug(name, "bad histogram buckets");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& family : families_) {
    if (family->name() != name) continue;
    if (family->type() != type || family->label_names() != label_names) {
      registration_bug(name, "registered before with another type or labels");
    }
    return static_cast<F&>(*family);
  }
  auto family = std::make_unique<F>(std::string(name), std::string(help), type,
                                    std::move(label_names),
                                    std::vector<double>(upper_bounds.begin(), upper_bounds.end()));
  F& ref = *family;
  families_.push_back(std::move(family));
  return ref;
}

CounterFamily& MetricsRegistry::counter_family(std::string_view name, std::string_view help,
                                               std::vector<std::string> label_names) {
  return add<CounterFamily>(name, help, MetricType::kCounter, std::move(label_names), {});
}

GaugeFamily& MetricsRegistry::gauge_family(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names) {
  return add<GaugeFamily>(name, help, MetricType::kGauge, std::move(label_names), {});
}

HistogramFamily& MetricsRegistry::histogram_family(std::string_view name, std::string_view help,
                                                   std::vector<std::string> label_names,
                                                   std::span<const double> upper_bounds) {
  return add<HistogramFamily>(name, help, MetricType::kHistogram, std::move(label_names),
                              upper_bounds);
}

std::string MetricsRegistry::render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& family : families_) family->render(&out);
  return out;
}

}  // namespace plimsoll::metrics
