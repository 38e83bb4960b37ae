#include "loadgen/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/html_escape.h"

namespace strata::loadgen {
namespace {

constexpr double kWidth = 1200, kHeight = 820;
constexpr double kPanelW = 600, kPanelH = 370, kTop = 60;
constexpr double kMarginL = 70, kMarginR = 25, kMarginT = 35, kMarginB = 50;

std::string escape(const std::string& s) {
  return html_escape(s, HtmlQuotes::kNamed);
}

std::string f(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

struct Panel {
  double x0, y0;  // top-left of the plot area
  double w = kPanelW - kMarginL - kMarginR, h = kPanelH - kMarginT - kMarginB;
  double xmax = 1, ymax = 1;

  double px(double x) const { return x0 + x / xmax * w; }
  double py(double y) const { return y0 + h - y / ymax * h; }
};

Panel make_panel(int col, int row) {
  Panel p;
  p.x0 = col * kPanelW + kMarginL;
  p.y0 = kTop + row * (kPanelH + 10) + kMarginT;
  return p;
}

void axes(std::string& svg, Panel& p, const std::string& title, const std::string& xlabel,
          const std::string& ylabel, double xmax, double ymax, bool y_fraction) {
  const double xs = nice_step(xmax), ys = y_fraction ? 0.25 : nice_step(ymax);
  p.xmax = std::max(xs, std::ceil(xmax / xs - 1e-9) * xs);
  p.ymax = y_fraction ? 1.0 : std::max(ys, std::ceil(ymax / ys - 1e-9) * ys);
  svg += "<text x=\"" + f(p.x0 + p.w / 2) + "\" y=\"" + f(p.y0 - 12) +
         "\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" + escape(title) +
         "</text>\n";
  for (double x = 0; x <= p.xmax + xs / 2; x += xs) {
    svg += "<line x1=\"" + f(p.px(x)) + "\" y1=\"" + f(p.y0) + "\" x2=\"" + f(p.px(x)) +
           "\" y2=\"" + f(p.y0 + p.h) + "\" stroke=\"#e4e4e4\"/>\n";
    svg += "<text x=\"" + f(p.px(x)) + "\" y=\"" + f(p.y0 + p.h + 16) +
           "\" text-anchor=\"middle\" font-size=\"11\">" + label(x) + "</text>\n";
  }
  for (double y = 0; y <= p.ymax + ys / 2; y += ys) {
    svg += "<line x1=\"" + f(p.x0) + "\" y1=\"" + f(p.py(y)) + "\" x2=\"" + f(p.x0 + p.w) +
           "\" y2=\"" + f(p.py(y)) + "\" stroke=\"#e4e4e4\"/>\n";
    svg += "<text x=\"" + f(p.x0 - 6) + "\" y=\"" + f(p.py(y) + 4) +
           "\" text-anchor=\"end\" font-size=\"11\">" + label(y) + "</text>\n";
  }
  svg += "<rect x=\"" + f(p.x0) + "\" y=\"" + f(p.y0) + "\" width=\"" + f(p.w) + "\" height=\"" +
         f(p.h) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  svg += "<text x=\"" + f(p.x0 + p.w / 2) + "\" y=\"" + f(p.y0 + p.h + 36) +
         "\" text-anchor=\"middle\" font-size=\"12\">" + escape(xlabel) + "</text>\n";
  svg += "<text transform=\"translate(" + f(p.x0 - 48) + "," + f(p.y0 + p.h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" + escape(ylabel) + "</text>\n";
}

void no_data(std::string& svg, const Panel& p) {
  svg += "<text x=\"" + f(p.x0 + p.w / 2) + "\" y=\"" + f(p.y0 + p.h / 2) +
         "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#888\">no data</text>\n";
}

// Empirical CDF of `values` (ms) as a step line, with its median and p99 marked.
void cdf_panel(std::string& svg, int col, int row, const std::string& title,
               std::vector<double> values, const char* color) {
  Panel p = make_panel(col, row);
  std::sort(values.begin(), values.end());
  const double xmax = values.empty() ? 1.0 : std::max(values.back(), 1e-3);
  std::string t = title;
  if (!values.empty()) {
    t += "  (median " + label(std::round(percentile(values, 50) * 100) / 100) + ", p99 " +
         label(std::round(percentile(values, 99) * 100) / 100) + " ms)";
  }
  axes(svg, p, t, "milliseconds", "fraction of requests", xmax, 1.0, true);
  if (values.empty()) return no_data(svg, p);
  std::string path = "M" + f(p.px(0)) + "," + f(p.py(0));
  const double n = static_cast<double>(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    path += " L" + f(p.px(values[i])) + "," + f(p.py(static_cast<double>(i) / n));
    path += " L" + f(p.px(values[i])) + "," + f(p.py(static_cast<double>(i + 1) / n));
  }
  svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
}

void timeline_panel(std::string& svg, int col, int row, const std::vector<RequestRecord>& records,
                    double duration_s) {
  Panel p = make_panel(col, row);
  const auto bins = throughput_timeline(records, 1.0);
  const double ymax =
      bins.empty() ? 1.0 : std::max(1.0, *std::max_element(bins.begin(), bins.end()));
  const double xmax = std::max({1.0, static_cast<double>(bins.size()), duration_s});
  axes(svg, p, "Output tokens/s, per second of the run", "seconds since the start", "tokens/s",
       xmax, ymax, false);
  if (bins.empty()) return no_data(svg, p);
  for (size_t i = 0; i < bins.size(); ++i) {
    const double x = p.px(static_cast<double>(i)), x1 = p.px(static_cast<double>(i + 1));
    svg += "<rect x=\"" + f(x) + "\" y=\"" + f(p.py(bins[i])) + "\" width=\"" +
           f(std::max(0.5, x1 - x - 1)) + "\" height=\"" + f(p.py(0) - p.py(bins[i])) +
           "\" fill=\"#4c78a8\"><title>" + label(static_cast<double>(i)) + "-" +
           label(static_cast<double>(i + 1)) + " s: " + label(std::round(bins[i] * 10) / 10) +
           " tok/s</title></rect>\n";
  }
}

}  // namespace

double nice_step(double max, int ticks) {
  if (!(max > 0) || !std::isfinite(max)) return 1;
  const double raw = max / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10;
  return step * mag;
}

std::string render_svg(const std::vector<RequestRecord>& records, const Summary& s,
                       const std::string& title) {
  std::vector<double> ttft, tpot, e2el;
  for (const RequestRecord& r : records) {
    if (!r.ok()) continue;
    ttft.push_back(r.ttft_s * 1e3);
    e2el.push_back(r.e2el_s * 1e3);
    if (const auto t = tpot_s(r)) tpot.push_back(*t * 1e3);
  }
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + f(kWidth) +
                    "\" height=\"" + f(kHeight) + "\" viewBox=\"0 0 " + f(kWidth) + " " +
                    f(kHeight) + "\" font-family=\"sans-serif\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + f(kWidth / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">" +
         escape(title) + "</text>\n";
  char sub[256];
  std::snprintf(sub, sizeof sub,
                "%lld completed, %lld failed in %.2f s: %.2f req/s, %.1f output tok/s, %.1f total "
                "tok/s",
                static_cast<long long>(s.completed), static_cast<long long>(s.failed), s.duration_s,
                s.request_throughput, s.output_throughput, s.total_token_throughput);
  svg += "<text x=\"" + f(kWidth / 2) + "\" y=\"46\" text-anchor=\"middle\" font-size=\"13\"" +
         (s.failed > 0 ? " fill=\"#c00\"" : "") + ">" + escape(sub) + "</text>\n";
  cdf_panel(svg, 0, 0, "TTFT CDF", std::move(ttft), "#e45756");
  cdf_panel(svg, 1, 0, "TPOT CDF", std::move(tpot), "#54a24b");
  cdf_panel(svg, 0, 1, "E2E latency CDF", std::move(e2el), "#b279a2");
  timeline_panel(svg, 1, 1, records, s.duration_s);
  svg += "</svg>\n";
  return svg;
}

}  // namespace strata::loadgen
