// The ramp chart: predicted and measured memory against batch size, with the
// limit and the stop line; hand-written SVG, and PNG through rsvg-convert.
#pragma once

#include <string>

#include "core/result.h"
#include "planner/ramp.h"

namespace plimsoll::planner {

// A complete SVG document (800 x 500): axes with units and ticks, a legend,
// predicted (and, where run, measured RSS and cgroup peak) per batch, the limit and 85 % lines.
std::string ramp_chart_svg(const RampResult& ramp, const std::string& title);

// Converts with rsvg-convert when installed; kUnsupported when it is not.
Status svg_to_png(const std::string& svg_path, const std::string& png_path);

}  // namespace plimsoll::planner
