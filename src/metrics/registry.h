// MetricsRegistry: named metric families with label sets, created at start-up
// and rendered in the Prometheus text exposition format (version 0.0.4).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metric.h"

namespace plimsoll::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// The text exposition's escaping: HELP escapes `\` and newline; label values
// also escape `"`.
std::string escape_help(std::string_view text);
std::string escape_label_value(std::string_view text);
// Sample values: integers plainly, others in the shortest round-trip form,
// and +Inf / -Inf / NaN as Prometheus spells them.
std::string format_value(double value);
// [a-zA-Z_:][a-zA-Z0-9_:]* (metric names) / [a-zA-Z_][a-zA-Z0-9_]* (label names).
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

// One metric name with its HELP, TYPE and label names; one child per label
// value set. A child is created on first use (under a lock) and lives as long
// as the registry, so hot paths keep the reference and only touch atomics.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  // Appends this family's HELP, TYPE and samples; nothing when it has no child.
  virtual void render(std::string* out) const = 0;

 protected:
  // `{a="x",b="y"}` for the label values (plus `extra`, e.g. le="0.5"), "" when empty.
  std::string label_text(const std::vector<std::string>& values,
                         std::string_view extra = {}) const;
  void render_header(std::string* out) const;

  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
  mutable std::mutex mutex_;  // guards the children maps of subclasses
};

template <typename M>
class Family final : public FamilyBase {
 public:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::vector<double> upper_bounds = {})
      : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
        upper_bounds_(std::move(upper_bounds)) {}

  // The child for these label values (as many as label names; missing ones
  // are "", extra ones dropped). Takes a lock: call once and keep the reference.
  M& labels(std::vector<std::string> values);
  void render(std::string* out) const override;

 private:
  std::unique_ptr<M> make_child() const;
  void render_child(const std::vector<std::string>& values, const M& metric,
                    std::string* out) const;

  std::vector<double> upper_bounds_;  // histograms only
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registering a name twice returns the first family when the type and
  // labels agree. Names are compile-time constants (metrics/names.h): an
  // invalid or conflicting one is a bug and aborts with a message.
  CounterFamily& counter_family(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names);
  GaugeFamily& gauge_family(std::string_view name, std::string_view help,
                            std::vector<std::string> label_names);
  HistogramFamily& histogram_family(std::string_view name, std::string_view help,
                                    std::vector<std::string> label_names,
                                    std::span<const double> upper_bounds);

  // Unlabeled shorthands.
  Counter& counter(std::string_view name, std::string_view help) {
    return counter_family(name, help, {}).labels({});
  }
  Gauge& gauge(std::string_view name, std::string_view help) {
    return gauge_family(name, help, {}).labels({});
  }
  Histogram& histogram(std::string_view name, std::string_view help,
                       std::span<const double> upper_bounds) {
    return histogram_family(name, help, {}, upper_bounds).labels({});
  }

  // Every family in registration order, in the text exposition format.
  std::string render() const;
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  template <typename F>
  F& add(std::string_view name, std::string_view help, MetricType type,
         std::vector<std::string> label_names, std::span<const double> upper_bounds);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<FamilyBase>> families_;
};

}  // namespace plimsoll::metrics
