#pragma once
// The inline SVG figures of report.html: charts of points and lines over time or size, horizontal
// bars, and a waterfall of one request's terms. Axes carry round ticks (a step of 1, 2 or 5 times
// a power of ten) and count axes whole numbers; each tick label is a <text class="tick"> with
// data-axis="x" or "y", each figure's data-points says how much it drew and data-counts which of
// its axes count.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace infdoctor::bundle {

// An axis's ticks: from `lo` to `hi` in whole steps.
struct Ticks {
  double lo = 0, hi = 1, step = 1;
};
// About `want` round ticks over [lo, hi], the range widened to whole steps; a count axis
// (`integer`) steps by whole numbers.
Ticks round_ticks(double lo, double hi, bool integer, int want = 5);
// A tick's label: as many decimals as the step needs ("0.25", "1500", "2").
std::string tick_label(double v, double step);

struct Axis {
  Axis(std::string label_text, bool counts = false) : label(std::move(label_text)), integer(counts) {}
  std::string label;
  bool integer = false;  // a count: whole-number ticks
  std::optional<std::pair<double, double>> reach;  // a range the axis covers whatever the data
};

enum class Mark { Dot, Cross, Ring };

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool line = true;
  std::string color = "#1f6feb";
  Mark mark = Mark::Dot;
  bool steps = false;  // a line drawn as a staircase (arrivals: flat where nothing came)
  // Beside each point, in its tooltip (the request it came from); empty, or one a point.
  std::vector<std::string> notes = {};
};

// Spans of the x axis shaded behind the data (slow periods), with their legend.
struct Shading {
  std::string name;
  std::vector<std::pair<double, double>> spans;
};

std::string svg_chart(const std::string& id, const Axis& x, const Axis& y, const std::vector<Series>& series,
                      const Shading& shading = {});

// Horizontal bars, one per named value, for a breakdown.
std::string svg_bars(const std::string& id, const std::string& unit, const std::vector<std::pair<std::string, double>>& bars);

// One request's terms one after another on a time axis in ms; a marked row (the top finding's
// term) is drawn in red, its note in the bar's tooltip.
struct WaterfallRow {
  std::string label;
  double start_ms = 0, ms = 0;
  bool marked = false;
  std::string note;
};
std::string svg_waterfall(const std::string& id, const std::vector<WaterfallRow>& rows);

std::string figure(const std::string& id, const std::string& caption, const std::string& svg);

}  // namespace infdoctor::bundle
