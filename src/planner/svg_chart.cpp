// SVG by hand: a log2 batch axis, a linear MiB axis from zero to above the
// limit, one polyline and markers per series.
#include "planner/svg_chart.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "core/bytes.h"

namespace plimsoll::planner {
namespace {

constexpr double kW = 800, kH = 500, kLeft = 90, kRight = 30, kTop = 50, kBottom = 70;

struct Frame {
  double max_log2 = 1;
  double max_mib = 1;
  double x(int64_t batch) const {
    return kLeft + (kW - kLeft - kRight) * std::log2(static_cast<double>(batch)) / max_log2;
  }
  double y(int64_t bytes) const {
    return kH - kBottom - (kH - kTop - kBottom) * (static_cast<double>(bytes) / kMiB) / max_mib;
  }
};

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '<') o += "&lt;";
    else if (ch == '>') o += "&gt;";
    else if (ch == '&') o += "&amp;";
    else o += ch;
  }
  return o;
}

double nice_step(double range) {
  const double raw = range / 6, mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

Frame make_frame(const RampResult& r) {
  Frame f;
  int64_t top = r.limit_bytes, last = 2;
  for (const RampStep& s : r.steps) {
    top = std::max({top, s.predicted_bytes, s.measured_bytes()});
    last = std::max(last, s.batch);
  }
  f.max_log2 = std::max(1.0, std::ceil(std::log2(static_cast<double>(last))));
  f.max_mib = static_cast<double>(top) / kMiB * 1.08;
  return f;
}

std::string axes(const Frame& f) {
  std::string s;
  const double x0 = kLeft, x1 = kW - kRight, y0 = kH - kBottom, y1 = kTop;
  s += fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='black'/>\n", x0, y0, x1, y0);
  s += fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='black'/>\n", x0, y0, x0, y1);
  for (int k = 0; k <= static_cast<int>(f.max_log2); ++k) {
    const double x = f.x(int64_t{1} << k);
    s += fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='black'/>\n", x, y0, x, y0 + 5);
    s += fmt("<text x='%.1f' y='%.1f' text-anchor='middle'>%.0f</text>\n", x, y0 + 20, std::ldexp(1.0, k));
  }
  const double step = nice_step(f.max_mib);
  for (double m = 0; m <= f.max_mib; m += step) {
    const double y = f.y(static_cast<int64_t>(m * kMiB));
    s += fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>\n", x0, y, x1, y);
    s += fmt("<text x='%.1f' y='%.1f' text-anchor='end'>%.0f</text>\n", x0 - 8, y + 5, m);
  }
  s += fmt("<text x='%.1f' y='%.1f' text-anchor='middle'>batch size (concurrent sequences, log scale)</text>\n",
           (x0 + x1) / 2, kH - 22);
  s += fmt("<text x='%.1f' y='%.1f' text-anchor='middle' transform='rotate(-90 %.1f %.1f)'>memory (MiB)</text>\n",
           22, (y0 + y1) / 2, 22, (y0 + y1) / 2);
  return s;
}

std::string hline(const Frame& f, int64_t bytes, const char* style, const std::string& label) {
  const double y = f.y(bytes);
  return fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' ", kLeft, y, kW - kRight, y) + style + "/>\n" +
         fmt("<text x='%.1f' y='%.1f' text-anchor='end' font-size='12'>", kW - kRight - 4, y - 5) + escape(label) +
         "</text>\n";
}

std::string series(const Frame& f, const RampResult& r, const std::function<int64_t(const RampStep&)>& value,
                   const char* color, const char* dash) {
  std::string pts, marks;
  for (const RampStep& s : r.steps) {
    const int64_t v = value(s);
    if (v <= 0) continue;
    pts += fmt("%.1f,%.1f ", f.x(s.batch), f.y(v));
    marks += fmt("<circle cx='%.1f' cy='%.1f' r='4' fill='", f.x(s.batch), f.y(v)) + color + "'/>\n";
  }
  if (pts.empty()) return "";
  return std::string("<polyline fill='none' stroke-width='2.5' stroke='") + color + "' stroke-dasharray='" + dash +
         "' points='" + pts + "'/>\n" + marks;
}

// Top left, below the 85 % line: where the ramp's curve is still low.
std::string legend(const std::vector<std::pair<std::string, std::string>>& items, double top) {
  std::string s = fmt("<rect x='%.1f' y='%.1f' width='250' height='%.1f' fill='white' stroke='#999'/>\n", kLeft + 12,
                      top, 10.0 + 20.0 * static_cast<double>(items.size()));
  double y = top + 18;
  for (const auto& [color, label] : items) {
    s += fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke-width='3' stroke='", kLeft + 20, y - 5, kLeft + 44,
             y - 5) + color + "'/>\n";
    s += fmt("<text x='%.1f' y='%.1f' font-size='13'>", kLeft + 52, y) + escape(label) + "</text>\n";
    y += 20;
  }
  return s;
}

}  // namespace

std::string ramp_chart_svg(const RampResult& r, const std::string& title) {
  const Frame f = make_frame(r);
  std::string s = fmt("<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' viewBox='0 0 %.0f %.0f' ",
                      kW, kH, kW, kH) + "font-family='DejaVu Sans, Arial, sans-serif' font-size='14'>\n";
  s += fmt("<rect width='%.0f' height='%.0f' fill='white'/>\n", kW, kH);
  s += fmt("<text x='%.1f' y='28' text-anchor='middle' font-size='16' font-weight='bold'>", kW / 2) + escape(title) +
       "</text>\n";
  s += axes(f);
  s += hline(f, r.limit_bytes, "stroke='#b00' stroke-width='2'", "limit " + format_bytes(r.limit_bytes));
  const auto stop = static_cast<int64_t>(r.stop_fraction * static_cast<double>(r.limit_bytes));
  s += hline(f, stop, "stroke='#e80' stroke-width='2' stroke-dasharray='8 5'",
             fmt("%.0f %% of the limit ", r.stop_fraction * 100) + format_bytes(stop));
  std::vector<std::pair<std::string, std::string>> items = {{"#1f5fbf", "predicted (memory model)"}};
  s += series(f, r, [](const RampStep& x) { return x.predicted_bytes; }, "#1f5fbf", "6 4");
  if (std::any_of(r.steps.begin(), r.steps.end(), [](const RampStep& x) { return x.measured_rss_bytes > 0; })) {
    items.push_back({"#d62728", "measured peak RSS"});
    s += series(f, r, [](const RampStep& x) { return x.measured_rss_bytes; }, "#d62728", "none");
  }
  if (std::any_of(r.steps.begin(), r.steps.end(), [](const RampStep& x) { return x.cgroup_peak_bytes > 0; })) {
    items.push_back({"#2ca02c", "measured cgroup peak"});
    s += series(f, r, [](const RampStep& x) { return x.cgroup_peak_bytes; }, "#2ca02c", "2 3");
  }
  s += legend(items, std::max(kTop + 8, f.y(stop) + 12));
  return s + "</svg>\n";
}

Status svg_to_png(const std::string& svg_path, const std::string& png_path) {
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    return make_error(ErrorCode::kUnsupported, "rsvg-convert is not installed (Debian: librsvg2-bin)");
  }
  const std::string cmd = "rsvg-convert -b white -o '" + png_path + "' '" + svg_path + "'";
  if (std::system(cmd.c_str()) != 0) return make_error(ErrorCode::kIo, "rsvg-convert failed on " + svg_path);
  return {};
}

}  // namespace plimsoll::planner
