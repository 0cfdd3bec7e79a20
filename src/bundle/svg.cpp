#include "bundle/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/strings.h"

namespace infdoctor::bundle {
namespace {

using core::fmt;
using core::html_escape;

std::string not_measured(double w, double h) {
  return "<text x=\"" + fmt("%g", w / 2) + "\" y=\"" + fmt("%g", h / 2) +
         "\" text-anchor=\"middle\" class=\"empty\">not measured in this run</text></svg>";
}

// `counts`: the axes that count ("x", "y", "xy"), said in data-counts for whoever reads the picture.
std::string open_svg(const std::string& id, std::size_t points, double w, double h, const std::string& counts = "") {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + id + "\" data-points=\"" + std::to_string(points) +
         "\" data-counts=\"" + counts +
         "\" viewBox=\"0 0 " + fmt("%g", w) + " " + fmt("%g", h) + "\" width=\"" + fmt("%g", w) + "\" height=\"" +
         fmt("%g", h) + "\" role=\"img\">";
}

// The tick values of `t`, computed from whole multiples so that no rounding drift shows.
std::vector<double> tick_values(const Ticks& t) {
  std::vector<double> out;
  const long first = std::lround(t.lo / t.step), last = std::lround(t.hi / t.step);
  for (long k = first; k <= last && out.size() < 64; ++k) out.push_back(static_cast<double>(k) * t.step);
  return out;
}

}  // namespace

Ticks round_ticks(double lo, double hi, bool integer, int want) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(want, 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (const double m : {1.0, 2.0, 5.0})
    if (m * power >= raw * (1 - 1e-9)) {
      step = m * power;
      break;
    }
  if (integer) step = std::max(1.0, std::round(step));
  Ticks t{std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step, step};
  if (t.hi - t.lo < 2 * step * (1 - 1e-9)) t.hi = t.lo + 2 * step;  // a count axis over a short range: three ticks
  return t;
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < step / 2 ? 0.0 : v);
  return buf;
}

std::string svg_chart(const std::string& id, const Axis& x, const Axis& y, const std::vector<Series>& series,
                      const Shading& shading) {
  const double W = 560, H = 300, L = 64, R = 16, T = 24, B = 48;
  double x0 = 1e300, x1 = -1e300, y0 = 0, y1 = -1e300;
  std::size_t n = 0;
  for (const auto& s : series)
    for (const auto& [px, py] : s.points) {
      x0 = std::min(x0, px);
      x1 = std::max(x1, px);
      y0 = std::min(y0, py);
      y1 = std::max(y1, py);
      ++n;
    }
  std::ostringstream o;
  o << open_svg(id, n, W, H, std::string(x.integer ? "x" : "") + (y.integer ? "y" : ""));
  if (n == 0) return o.str() + not_measured(W, H);
  for (const auto& [a, b] : shading.spans) {
    x0 = std::min(x0, a);
    x1 = std::max(x1, b);
  }
  if (x.reach) {
    x0 = std::min(x0, x.reach->first);
    x1 = std::max(x1, x.reach->second);
  }
  if (x1 == x0) {  // one x: room either side
    x0 -= x.integer ? 1 : std::max(std::abs(x0) * 0.5, 1.0);
    x1 += x.integer ? 1 : std::max(std::abs(x1) * 0.5, 1.0);
  }
  const Ticks tx = round_ticks(x0, x1, x.integer), ty = round_ticks(y0, y1, y.integer);
  auto px = [&](double v) { return L + (v - tx.lo) / (tx.hi - tx.lo) * (W - L - R); };
  auto py = [&](double v) { return H - B - (v - ty.lo) / (ty.hi - ty.lo) * (H - T - B); };
  for (const auto& [a, b] : shading.spans)
    o << "<rect class=\"shade\" x=\"" << px(a) << "\" y=\"" << T << "\" width=\"" << std::max(2.0, px(b) - px(a))
      << "\" height=\"" << H - T - B << "\" fill=\"#fbe3b6\"><title>" << html_escape(shading.name) << ": "
      << fmt("%.4g", a) << " to " << fmt("%.4g", b) << "</title></rect>";
  for (const double v : tick_values(ty)) {
    o << "<line x1=\"" << L << "\" y1=\"" << py(v) << "\" x2=\"" << W - R << "\" y2=\"" << py(v) << "\" stroke=\"#eee\"/>";
    o << "<text x=\"" << L - 6 << "\" y=\"" << py(v) + 4 << "\" text-anchor=\"end\" class=\"tick\" data-axis=\"y\">"
      << tick_label(v, ty.step) << "</text>";
  }
  for (const double v : tick_values(tx))
    o << "<text x=\"" << px(v) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\" class=\"tick\" data-axis=\"x\">"
      << tick_label(v, tx.step) << "</text>";
  o << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" stroke=\"#555\"/>";
  o << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"#555\"/>";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">" << html_escape(x.label) << "</text>";
  o << "<text x=\"14\" y=\"" << (T + H - B) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " << (T + H - B) / 2
    << ")\">" << html_escape(y.label) << "</text>";
  int legend = 0;
  const auto legend_line = [&](const std::string& name, const std::string& color) {
    o << "<text x=\"" << W - R - 4 << "\" y=\"" << T + 2 + 14 * legend++ << "\" text-anchor=\"end\" class=\"legend\" fill=\""
      << color << "\">" << html_escape(name) << "</text>";
  };
  if (!shading.spans.empty()) legend_line(shading.name, "#a15c00");
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    if (s.line && s.points.size() > 1) {
      o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"" << (s.steps ? 1.5 : 2) << "\" points=\"";
      for (std::size_t i = 0; i < s.points.size(); ++i) {
        if (s.steps && i > 0) o << px(s.points[i].first) << "," << py(s.points[i - 1].second) << " ";
        o << px(s.points[i].first) << "," << py(s.points[i].second) << " ";
      }
      o << "\"/>";
    }
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const auto [vx, vy] = s.points[i];
      const double cx = px(vx), cy = py(vy);
      const std::string note = i < s.notes.size() && !s.notes[i].empty() ? " (" + html_escape(s.notes[i]) + ")" : "";
      const std::string title = "<title>" + html_escape(s.name) + ": " + fmt("%.4g", vx) + ", " + fmt("%.4g", vy) + note + "</title>";
      if (s.mark == Mark::Cross)
        o << "<path d=\"M" << cx - 4 << " " << cy - 4 << "L" << cx + 4 << " " << cy + 4 << "M" << cx - 4 << " " << cy + 4 << "L"
          << cx + 4 << " " << cy - 4 << "\" stroke=\"" << s.color << "\" stroke-width=\"2\">" << title << "</path>";
      else if (s.mark == Mark::Ring)
        o << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"4\" fill=\"none\" stroke=\"" << s.color
          << "\" stroke-width=\"1.5\">" << title << "</circle>";
      else
        o << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"" << (s.steps ? 1.5 : 3) << "\" fill=\"" << s.color << "\">"
          << title << "</circle>";
    }
    legend_line(s.name, s.color);
  }
  o << "</svg>";
  return o.str();
}

std::string svg_bars(const std::string& id, const std::string& unit, const std::vector<std::pair<std::string, double>>& bars) {
  const double W = 560, row = 30, L = 110, R = 90, T = 10;
  const double H = T * 2 + row * static_cast<double>(std::max<std::size_t>(bars.size(), 1));
  double mx = 0;
  for (const auto& b : bars) mx = std::max(mx, b.second);
  std::ostringstream o;
  o << open_svg(id, bars.size(), W, H);
  if (bars.empty()) return o.str() + not_measured(W, H);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double y = T + row * static_cast<double>(i);
    const double w = mx > 0 ? std::max(1.0, bars[i].second / mx * (W - L - R)) : 1.0;
    o << "<text x=\"" << L - 8 << "\" y=\"" << y + 19 << "\" text-anchor=\"end\">" << html_escape(bars[i].first) << "</text>"
      << "<rect x=\"" << L << "\" y=\"" << y + 6 << "\" width=\"" << w << "\" height=\"18\" fill=\"#0969da\"><title>"
      << fmt("%.1f", bars[i].second) << " " << unit << "</title></rect>"
      << "<text x=\"" << L + w + 6 << "\" y=\"" << y + 19 << "\">" << fmt("%.1f ", bars[i].second) << unit << "</text>";
  }
  o << "</svg>";
  return o.str();
}

std::string svg_waterfall(const std::string& id, const std::vector<WaterfallRow>& rows) {
  const double W = 680, row = 28, L = 190, R = 130, T = 8, B = 40;
  const double H = T + B + row * static_cast<double>(std::max<std::size_t>(rows.size(), 1));
  std::ostringstream o;
  o << open_svg(id, rows.size(), W, H);
  if (rows.empty()) return o.str() + not_measured(W, H);
  double end = 0;
  for (const auto& r : rows) end = std::max(end, r.start_ms + r.ms);
  const Ticks t = round_ticks(0, std::max(end, 1.0), false);
  auto px = [&](double v) { return L + v / t.hi * (W - L - R); };
  const double bottom = T + row * static_cast<double>(rows.size());
  for (const double v : tick_values(t)) {
    o << "<line x1=\"" << px(v) << "\" y1=\"" << T << "\" x2=\"" << px(v) << "\" y2=\"" << bottom << "\" stroke=\"#eee\"/>";
    o << "<text x=\"" << px(v) << "\" y=\"" << bottom + 16 << "\" text-anchor=\"middle\" class=\"tick\" data-axis=\"x\">"
      << tick_label(v, t.step) << "</text>";
  }
  o << "<line x1=\"" << L << "\" y1=\"" << bottom << "\" x2=\"" << W - R << "\" y2=\"" << bottom << "\" stroke=\"#555\"/>";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">ms from the request's start</text>";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const double y = T + row * static_cast<double>(i);
    const double x = px(r.start_ms), w = std::max(1.5, px(r.start_ms + r.ms) - x);
    const char* color = r.marked ? "#d1242f" : "#0969da";
    o << "<text x=\"" << L - 8 << "\" y=\"" << y + 18 << "\" text-anchor=\"end\"" << (r.marked ? " font-weight=\"bold\"" : "")
      << ">" << html_escape(r.label) << "</text>";
    o << "<rect x=\"" << x << "\" y=\"" << y + 6 << "\" width=\"" << w << "\" height=\"16\" fill=\"" << color << "\""
      << (r.marked ? " class=\"marked\"" : "") << "><title>" << html_escape(r.label) << ": " << fmt("%.0f ms", r.ms)
      << (r.note.empty() ? "" : " (" + html_escape(r.note) + ")") << "</title></rect>";
    o << "<text x=\"" << x + w + 6 << "\" y=\"" << y + 18 << "\" fill=\"" << color << "\">" << fmt("%.0f ms", r.ms) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

std::string figure(const std::string& id, const std::string& caption, const std::string& svg) {
  return "<figure data-plot=\"" + id + "\">" + svg + "<figcaption>" + html_escape(caption) + "</figcaption></figure>\n";
}

}  // namespace infdoctor::bundle
