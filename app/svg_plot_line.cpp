// The line chart of app/svg_plot.h: ticks for each axis (a second y axis aligned with the
// first's grid), a layout from the outside in, the legend in a free corner of the plot or in
// rows under it, then the SVG: headings, grid and axes, lines, markers, legend.
#include "app/svg_canvas.h"
#include "app/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

namespace clustersim::app {

using namespace plot_detail;

namespace {

bool usable(double v, const Axis& axis) {
    return std::isfinite(v) && (axis.scale == AxisScale::linear || v > 0);
}

struct Extent {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    bool empty() const { return !(lo <= hi); }
    void add(double v) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
};

/// The ticks of one axis from its data extent and its settings. `align_intervals` > 0 aligns a
/// linear axis whose range is not forced with another axis's grid.
AxisTicks axis_ticks(const Axis& axis, Extent data, int target, int align_intervals,
                     const char* name) {
    const auto bad = [name](const std::string& why) {
        return std::invalid_argument(std::string("line chart: ") + name + " axis: " + why);
    };
    if ((axis.min && !std::isfinite(*axis.min)) || (axis.max && !std::isfinite(*axis.max)))
        throw bad("forced range is not finite");
    if (axis.min && axis.max && !(*axis.min < *axis.max))
        throw bad("forced range is empty");
    if (axis.scale != AxisScale::linear) {
        if ((axis.min && *axis.min <= 0) || (axis.max && *axis.max <= 0))
            throw bad("forced range of a log axis must be positive");
        double lo = axis.min.value_or(data.empty() ? 1.0 : data.lo);
        double hi = axis.max.value_or(data.empty() ? 10.0 : data.hi);
        if (hi < lo) // one end forced beyond the data
            (axis.min ? hi : lo) = axis.min ? lo * 10 : hi / 10;
        AxisTicks t =
            plot_detail::log_ticks(lo, hi, axis.scale == AxisScale::log2 ? 2 : 10, axis.format);
        if (axis.min || axis.max) {
            if (axis.min)
                t.lo = *axis.min;
            if (axis.max)
                t.hi = *axis.max;
            std::erase_if(t.ticks, [&](const Tick& k) {
                return k.value < t.lo * (1 - 1e-9) || k.value > t.hi * (1 + 1e-9);
            });
        }
        return t;
    }
    double lo = data.empty() ? 0.0 : data.lo;
    double hi = data.empty() ? 1.0 : data.hi;
    if (axis.include_zero) {
        lo = std::min(lo, 0.0);
        hi = std::max(hi, 0.0);
    }
    if (axis.min)
        lo = *axis.min;
    if (axis.max)
        hi = *axis.max;
    if (hi < lo)
        (axis.min ? hi : lo) = axis.min ? lo + 1 : hi - 1;
    AxisTicks t = align_intervals > 0 && !axis.min && !axis.max
                      ? plot_detail::aligned_linear_ticks(lo, hi, align_intervals, axis.format)
                      : plot_detail::linear_ticks(lo, hi, axis.format, target);
    if (axis.min || axis.max) {
        if (axis.min)
            t.lo = *axis.min;
        if (axis.max)
            t.hi = *axis.max;
        const double slack = (t.hi - t.lo) * 1e-9;
        std::erase_if(t.ticks, [&](const Tick& k) {
            return k.value < t.lo - slack || k.value > t.hi + slack;
        });
    }
    return t;
}

/// The span a free linear axis must show: the data, with zero when the axis includes it.
double data_span(const Axis& axis, Extent data) {
    double lo = data.empty() ? 0.0 : data.lo;
    double hi = data.empty() ? 1.0 : data.hi;
    if (axis.include_zero) {
        lo = std::min(lo, 0.0);
        hi = std::max(hi, 0.0);
    }
    return hi - lo;
}

double max_label_width(const AxisTicks& t, double font) {
    double w = 0;
    for (const auto& k : t.ticks)
        w = std::max(w, text_width(k.label, font));
    return w;
}

struct Box {
    double x0, y0, x1, y1;
};

/// Whether the segment (ax, ay)-(bx, by) meets the box (Liang-Barsky clipping).
bool segment_hits(double ax, double ay, double bx, double by, const Box& b) {
    double t0 = 0, t1 = 1;
    const double dx = bx - ax, dy = by - ay;
    const std::array<std::pair<double, double>, 4> pq{
        {{-dx, ax - b.x0}, {dx, b.x1 - ax}, {-dy, ay - b.y0}, {dy, b.y1 - ay}}};
    for (const auto& [p, q] : pq) {
        if (p == 0) {
            if (q < 0)
                return false;
            continue;
        }
        const double r = q / p;
        if (p < 0)
            t0 = std::max(t0, r);
        else
            t1 = std::min(t1, r);
        if (t0 > t1)
            return false;
    }
    return true;
}

/// A series in pixels: runs of consecutive usable points.
using Polyline = std::vector<std::pair<double, double>>;

std::string marker_svg(int shape, double x, double y, std::string_view color) {
    const double r = 4;
    const std::string common =
        fmt::format(" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"1\"", color);
    switch (shape % 5) {
    case 0:
        return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\"{}/>", coord(x), coord(y), coord(r),
                           common);
    case 1:
        return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}/>",
                           coord(x - r * 0.9), coord(y - r * 0.9), coord(r * 1.8), coord(r * 1.8),
                           common);
    case 2:
        return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\"{}/>", coord(x), coord(y - r * 1.2),
                           coord(x + r * 1.1), coord(y + r * 0.8), coord(x - r * 1.1),
                           coord(y + r * 0.8), common);
    case 3:
        return fmt::format("<path d=\"M{} {}L{} {}L{} {}L{} {}Z\"{}/>", coord(x),
                           coord(y - r * 1.25), coord(x + r * 1.25), coord(y), coord(x),
                           coord(y + r * 1.25), coord(x - r * 1.25), coord(y), common);
    default:
        return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\"{}/>", coord(x), coord(y + r * 1.2),
                           coord(x + r * 1.1), coord(y - r * 0.8), coord(x - r * 1.1),
                           coord(y - r * 0.8), common);
    }
}

const char* dash_attr(LineStyle s) {
    switch (s) {
    case LineStyle::dashed:
        return " stroke-dasharray=\"8 5\"";
    case LineStyle::dotted:
        return " stroke-dasharray=\"1.5 4\" stroke-linecap=\"round\"";
    case LineStyle::solid:
        break;
    }
    return "";
}

struct LegendEntry {
    std::string text;
    std::string color;
    int shape;
    LineStyle line;
    bool markers;
};

constexpr double kLegendSample = 30;

void draw_legend_entry(Svg& svg, const LegendEntry& e, double x, double y_mid) {
    svg.line(x, y_mid, x + kLegendSample, y_mid, e.color, 2.5, dash_attr(e.line));
    if (e.markers)
        svg.raw(marker_svg(e.shape, x + kLegendSample / 2, y_mid, e.color) + "\n");
    svg.text(x + kLegendSample + 7, y_mid + kLegendFont * 0.35, e.text, kLegendFont, "start");
}

void check_line_chart(const LineChart& chart) {
    if (chart.width < 200 || chart.height < 150)
        throw std::invalid_argument("line chart: too small (at least 200x150)");
    for (const auto& s : chart.series)
        if (s.x.size() != s.y.size())
            throw std::invalid_argument("line chart: series '" + s.name +
                                        "': x and y differ in length");
}

/// The chart, its ticks, legend and plot area, as they are settled one after the other.
struct LinePlot {
    explicit LinePlot(const LineChart& c)
        : chart(c) {}
    const LineChart& chart;
    bool has_y2 = false;
    Axis y2_axis;
    AxisTicks xt, yt, y2t;
    std::vector<LegendEntry> legend;
    HeadingRows headings;
    double top = 0, left = 0, right = 0, bottom = 0; ///< the plot area, in pixels
};

/// Colour and marker shape of each series: its group's, groups in order of first appearance.
std::vector<int> series_groups(const LineChart& chart) {
    std::map<std::string, int> group_index;
    std::vector<int> series_group;
    for (const auto& s : chart.series) {
        const std::string key = s.group.empty() ? "\x01" + s.name : s.group;
        const auto [it, inserted] = group_index.emplace(key, static_cast<int>(group_index.size()));
        series_group.push_back(it->second);
    }
    return series_group;
}

/// The ticks of the three axes from the usable points of the series.
void settle_ticks(LinePlot& p) {
    const LineChart& chart = p.chart;
    Extent xe, ye, y2e;
    for (const auto& s : chart.series) {
        const Axis& ya = s.right_axis && p.has_y2 ? p.y2_axis : chart.y;
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (!usable(s.x[i], chart.x) || !usable(s.y[i], ya))
                continue;
            xe.add(s.x[i]);
            (s.right_axis && p.has_y2 ? y2e : ye).add(s.y[i]);
        }
    }
    const int y_target = std::clamp((chart.height - 200) / 60, 3, 8);
    const int x_target = std::clamp((chart.width - 200) / 110, 3, 10);
    p.xt = axis_ticks(chart.x, xe, x_target, 0, "x");
    p.yt = axis_ticks(chart.y, ye, y_target, 0, "y");
    if (!p.has_y2)
        return;
    const auto free_linear = [](const Axis& a) {
        return a.scale == AxisScale::linear && !a.min && !a.max;
    };
    if (free_linear(chart.y) && free_linear(p.y2_axis)) {
        // Both axes share the grid lines: pick the number of intervals that wastes the
        // least of both ranges (a 0-100% axis should not run to 140%).
        double best = std::numeric_limits<double>::infinity();
        for (int n = 3; n <= 8; ++n) {
            AxisTicks a = axis_ticks(chart.y, ye, y_target, n, "y");
            AxisTicks b = axis_ticks(p.y2_axis, y2e, y_target, n, "y2");
            const double waste = 2 - data_span(chart.y, ye) / (a.hi - a.lo) -
                                 data_span(p.y2_axis, y2e) / (b.hi - b.lo) +
                                 0.02 * std::abs(n - y_target);
            if (waste < best) {
                best = waste;
                p.yt = std::move(a);
                p.y2t = std::move(b);
            }
        }
    } else {
        // Aligned only when the left ticks span its whole range (a forced end off the
        // tick grid leaves nothing to align with).
        const AxisTicks& yt = p.yt;
        const bool align = chart.y.scale == AxisScale::linear && yt.ticks.size() > 1 &&
                           yt.ticks.front().value == yt.lo && yt.ticks.back().value == yt.hi;
        p.y2t = axis_ticks(p.y2_axis, y2e, y_target,
                           align ? static_cast<int>(yt.ticks.size()) - 1 : 0, "y2");
    }
}

/// Legend entries, in series order.
std::vector<LegendEntry> legend_entries(const LinePlot& p) {
    const std::vector<int> series_group = series_groups(p.chart);
    std::vector<LegendEntry> legend;
    for (std::size_t i = 0; i < p.chart.series.size(); ++i) {
        const auto& s = p.chart.series[i];
        const int g = series_group[i];
        std::string text = s.name;
        if (p.has_y2 && s.right_axis)
            text += " (right axis)";
        legend.push_back(
            {text, kPalette[static_cast<std::size_t>(g) % kPalette.size()], g, s.line, s.markers});
    }
    return legend;
}

/// The plot area, outside in, before any room is taken for legend rows under the axis.
void settle_margins(LinePlot& p) {
    const LineChart& chart = p.chart;
    const double W = chart.width, H = chart.height;
    p.headings = heading_rows(chart.title, chart.subtitle);
    p.top = p.headings.bottom + 14;
    const double y_label_w = chart.y.label.empty() ? 0 : kAxisLabelFont + 12;
    p.left = 14 + y_label_w + max_label_width(p.yt, kTickFont) + 10;
    double right_margin = 24;
    if (p.has_y2)
        right_margin = 10 + max_label_width(p.y2t, kTickFont) +
                       (p.y2_axis.label.empty() ? 0 : 12 + kAxisLabelFont) + 14;
    // The last x label is centred on the right edge and must not be cut.
    if (!p.xt.ticks.empty())
        right_margin =
            std::max(right_margin, text_width(p.xt.ticks.back().label, kTickFont) / 2 + 8);
    p.right = W - right_margin;
    p.bottom = H - 12 - (chart.footnote.empty() ? 0 : kFootnoteFont + 8) -
               (chart.x.label.empty() ? 0 : kAxisLabelFont + 10) - (kTickFont + 12);
}

/// A log x axis has no natural origin: its first and last points stay clear of the axes.
Mapper x_mapper(const LinePlot& p) {
    const bool log = p.chart.x.scale != AxisScale::linear;
    const double pad = log ? 14 : 0;
    return Mapper{p.xt.lo, p.xt.hi, p.left + pad, p.right - pad, log};
}

/// The series in pixels between `plot_top` and `plot_bottom`, and the series of each line.
struct PixelLines {
    std::vector<Polyline> lines;
    std::vector<std::size_t> owner;
};

PixelLines pixel_lines(const LinePlot& p, double plot_top, double plot_bottom) {
    const Mapper mx = x_mapper(p);
    std::vector<Polyline> lines;
    std::vector<std::size_t> owner;
    for (std::size_t si = 0; si < p.chart.series.size(); ++si) {
        const auto& s = p.chart.series[si];
        const bool r = s.right_axis && p.has_y2;
        const Axis& ya = r ? p.y2_axis : p.chart.y;
        const AxisTicks& ticks = r ? p.y2t : p.yt;
        Mapper my{ticks.lo, ticks.hi, plot_bottom, plot_top, ya.scale != AxisScale::linear};
        Polyline cur;
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (usable(s.x[i], p.chart.x) && usable(s.y[i], ya)) {
                cur.emplace_back(mx(s.x[i]), my(s.y[i]));
            } else if (!cur.empty()) {
                lines.push_back(std::move(cur));
                owner.push_back(si);
                cur.clear();
            }
        }
        if (!cur.empty()) {
            lines.push_back(std::move(cur));
            owner.push_back(si);
        }
    }
    return {lines, owner};
}

/// The first corner of the plot area (top right, top left, bottom right, bottom left) where a
/// legend box of `box_w` by `box_h` meets no line or marker; none when the box is too large
/// for the plot or every corner is taken.
std::optional<Box> free_legend_corner(const LinePlot& p, double box_w, double box_h) {
    const double top = p.top, bottom = p.bottom, left = p.left, right = p.right;
    if (p.legend.empty() || !(box_w < (right - left) * 0.5) || !(box_h < (bottom - top) * 0.6))
        return std::nullopt;
    const auto [lines, owner] = pixel_lines(p, top, bottom);
    const double inset = 10;
    const std::array<Box, 4> corners{{
        {right - inset - box_w, top + inset, right - inset, top + inset + box_h},
        {left + inset, top + inset, left + inset + box_w, top + inset + box_h},
        {right - inset - box_w, bottom - inset - box_h, right - inset, bottom - inset},
        {left + inset, bottom - inset - box_h, left + inset + box_w, bottom - inset},
    }};
    for (const Box& c : corners) {
        const double pad = 6; // keeps markers and line width clear of the box
        const Box b{c.x0 - pad, c.y0 - pad, c.x1 + pad, c.y1 + pad};
        bool hit = false;
        for (const auto& pl : lines) {
            for (std::size_t i = 0; i < pl.size() && !hit; ++i) {
                const auto [x, y] = pl[i];
                if (x >= b.x0 && x <= b.x1 && y >= b.y0 && y <= b.y1)
                    hit = true;
                else if (i + 1 < pl.size())
                    hit = segment_hits(x, y, pl[i + 1].first, pl[i + 1].second, b);
            }
            if (hit)
                break;
        }
        if (!hit)
            return c;
    }
    return std::nullopt;
}

/// Rows of legend entries (indices) under the chart, wrapped to the plot width.
std::vector<std::vector<std::size_t>> legend_rows_under(const LinePlot& p) {
    std::vector<std::vector<std::size_t>> legend_rows;
    double x = 0;
    legend_rows.emplace_back();
    for (std::size_t i = 0; i < p.legend.size(); ++i) {
        const double w = kLegendSample + 7 + text_width(p.legend[i].text, kLegendFont) + 24;
        if (x > 0 && x + w > p.right - p.left) {
            legend_rows.emplace_back();
            x = 0;
        }
        legend_rows.back().push_back(i);
        x += w;
    }
    return legend_rows;
}

/// Headings start at the plot's left edge, or at the margin when that leaves too little room.
double heading_x(const LinePlot& p, std::string_view text, double font) {
    return text_width(text, font) <= p.chart.width - p.left - 10 ? p.left : 14.0;
}

/// Grid lines at major ticks, then the axes over them, their ticks, labels and titles.
void draw_axes(Svg& svg, const LinePlot& p, const Mapper& mx, const Mapper& my, const Mapper& my2) {
    const double top = p.top, bottom = p.bottom, left = p.left, right = p.right;
    svg.raw("<g id=\"grid\">\n");
    for (const auto& k : p.yt.ticks)
        if (k.major && my.contains(k.value))
            svg.line(left, my(k.value), right, my(k.value), kGridColor, 1);
    for (const auto& k : p.xt.ticks)
        if (k.major && mx.contains(k.value))
            svg.line(mx(k.value), top, mx(k.value), bottom, kGridColor, 1);
    svg.raw("</g>\n<g id=\"axes\">\n");
    svg.line(left, bottom, right, bottom, kAxisColor, 1.2);
    svg.line(left, top, left, bottom, kAxisColor, 1.2);
    if (p.has_y2)
        svg.line(right, top, right, bottom, kAxisColor, 1.2);
    for (const auto& k : p.xt.ticks) {
        if (!mx.contains(k.value))
            continue;
        const double x = mx(k.value);
        svg.line(x, bottom, x, bottom + (k.major ? 5 : 3), kAxisColor, 1);
        if (!k.label.empty())
            svg.text(x, bottom + 8 + kTickFont, k.label, kTickFont, "middle");
    }
    for (const auto& k : p.yt.ticks) {
        if (!my.contains(k.value))
            continue;
        const double y = my(k.value);
        svg.line(left - (k.major ? 5 : 3), y, left, y, kAxisColor, 1);
        if (!k.label.empty())
            svg.text(left - 8, y + kTickFont * 0.35, k.label, kTickFont, "end");
    }
    if (p.has_y2) {
        for (const auto& k : p.y2t.ticks) {
            if (!my2.contains(k.value))
                continue;
            const double y = my2(k.value);
            svg.line(right, y, right + (k.major ? 5 : 3), y, kAxisColor, 1);
            if (!k.label.empty())
                svg.text(right + 8, y + kTickFont * 0.35, k.label, kTickFont, "start");
        }
    }
    const double mid_y = (top + bottom) / 2;
    // Axis titles fit along their axis: shrunk, then cut.
    const auto axis_title = [&](double x, double y, std::string_view text, double length,
                                std::string_view extra) {
        const double size = fitted_font(text, kAxisLabelFont, length);
        svg.text(x, y, fitted_text(text, size, length), size, "middle", kTextColor, extra);
    };
    const LineChart& chart = p.chart;
    if (!chart.x.label.empty())
        axis_title((left + right) / 2, bottom + 8 + kTickFont + 10 + kAxisLabelFont, chart.x.label,
                   right - left, {});
    if (!chart.y.label.empty())
        axis_title(14 + kAxisLabelFont, mid_y, chart.y.label, bottom - top,
                   fmt::format(" transform=\"rotate(-90 {} {})\"", coord(14 + kAxisLabelFont),
                               coord(mid_y)));
    if (p.has_y2 && !p.y2_axis.label.empty()) {
        const double x = chart.width - 14 - kAxisLabelFont;
        axis_title(x, mid_y, p.y2_axis.label, bottom - top,
                   fmt::format(" transform=\"rotate(90 {} {})\"", coord(x), coord(mid_y)));
    }
    svg.raw("</g>\n");
}

/// Data, clipped to the plot area (forced ranges may cut lines); markers are drawn after all
/// lines so that no line hides a point.
void draw_series(Svg& svg, const LinePlot& p) {
    const double top = p.top, bottom = p.bottom, left = p.left, right = p.right;
    svg.raw(fmt::format("<defs><clipPath id=\"plot-area\"><rect x=\"{}\" y=\"{}\" width=\"{}\" "
                        "height=\"{}\"/></clipPath></defs>\n",
                        coord(left - 6), coord(top - 6), coord(right - left + 12),
                        coord(bottom - top + 12)));
    svg.raw("<g id=\"data\" clip-path=\"url(#plot-area)\">\n");
    const auto [lines, owner] = pixel_lines(p, top, bottom);
    for (std::size_t li = 0; li < lines.size(); ++li) {
        const auto& pl = lines[li];
        const auto& e = p.legend[owner[li]];
        if (pl.size() < 2)
            continue;
        std::string d;
        for (std::size_t i = 0; i < pl.size(); ++i)
            d +=
                fmt::format("{}{} {}", i == 0 ? "M" : "L", coord(pl[i].first), coord(pl[i].second));
        svg.raw(fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" "
                            "stroke-linejoin=\"round\"{}/>\n",
                            d, e.color, dash_attr(e.line)));
    }
    svg.raw("</g>\n<g id=\"markers\" clip-path=\"url(#plot-area)\">\n");
    for (std::size_t li = 0; li < lines.size(); ++li) {
        const auto& e = p.legend[owner[li]];
        if (!e.markers)
            continue;
        for (const auto& [x, y] : lines[li])
            svg.raw(marker_svg(e.shape, x, y, e.color) + "\n");
    }
    svg.raw("</g>\n");
}

/// The legend, in its box inside the plot or in rows under the x axis.
void draw_legend(Svg& svg, const LinePlot& p, const std::optional<Box>& inside,
                 const std::vector<std::vector<std::size_t>>& rows) {
    svg.raw("<g id=\"legend\">\n");
    if (inside) {
        const Box& b = *inside;
        svg.rect(b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0, "#ffffff",
                 " fill-opacity=\"0.92\" stroke=\"#cccccc\" stroke-width=\"1\" rx=\"3\"");
        for (std::size_t i = 0; i < p.legend.size(); ++i)
            draw_legend_entry(svg, p.legend[i], b.x0 + 12,
                              b.y0 + 8 + kLegendRow * (static_cast<double>(i) + 0.5));
    } else {
        double y = p.bottom + 8 + kTickFont + 12 +
                   (p.chart.x.label.empty() ? 0 : kAxisLabelFont + 10) + kLegendRow / 2;
        for (const auto& row : rows) {
            double x = p.left;
            for (std::size_t i : row) {
                draw_legend_entry(svg, p.legend[i], x, y);
                x += kLegendSample + 7 + text_width(p.legend[i].text, kLegendFont) + 24;
            }
            y += kLegendRow;
        }
    }
    svg.raw("</g>\n");
}

} // namespace

std::string render_svg(const LineChart& chart) {
    check_line_chart(chart);
    LinePlot p{chart};
    p.has_y2 = chart.y2.has_value();
    p.y2_axis = chart.y2.value_or(Axis{});
    settle_ticks(p);
    p.legend = legend_entries(p);
    double legend_text_w = 0;
    for (const auto& e : p.legend)
        legend_text_w = std::max(legend_text_w, text_width(e.text, kLegendFont));
    const double legend_box_w = 12 + kLegendSample + 7 + legend_text_w + 12;
    const double legend_box_h = 8 + kLegendRow * static_cast<double>(p.legend.size()) + 4;
    settle_margins(p);

    // The legend goes in a free corner of the plot area; failing that, in rows under the axis.
    const std::optional<Box> legend_inside = free_legend_corner(p, legend_box_w, legend_box_h);
    std::vector<std::vector<std::size_t>> legend_rows;
    if (!p.legend.empty() && !legend_inside) {
        legend_rows = legend_rows_under(p);
        p.bottom -= kLegendRow * static_cast<double>(legend_rows.size()) + 8;
    }
    if (p.bottom - p.top < 60)
        throw std::invalid_argument("line chart: too small for its legend and labels");

    const Mapper mx = x_mapper(p);
    const Mapper my{p.yt.lo, p.yt.hi, p.bottom, p.top, chart.y.scale != AxisScale::linear};
    const Mapper my2{p.y2t.lo, p.y2t.hi, p.bottom, p.top, p.y2_axis.scale != AxisScale::linear};
    thin_labels(p.xt.ticks, mx);

    const double W = chart.width, H = chart.height;
    Svg svg(W, H);
    if (!chart.title.empty())
        heading(svg, heading_x(p, chart.title, kTitleFont), p.headings.title_y, W - 10, chart.title,
                kTitleFont, kTextColor, " font-weight=\"bold\"");
    if (!chart.subtitle.empty())
        heading(svg, heading_x(p, chart.subtitle, kSubtitleFont), p.headings.subtitle_y, W - 10,
                chart.subtitle, kSubtitleFont, kMutedColor);
    draw_axes(svg, p, mx, my, my2);
    draw_series(svg, p);
    draw_legend(svg, p, legend_inside, legend_rows);
    if (!chart.footnote.empty())
        heading(svg, heading_x(p, chart.footnote, kFootnoteFont), H - 12, W - 10, chart.footnote,
                kFootnoteFont, kMutedColor);
    return svg.finish();
}

} // namespace clustersim::app
