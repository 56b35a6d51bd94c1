// The Gantt chart of app/svg_plot.h: lanes (pipeline stages) of rows (streams) top to bottom,
// time left to right, a colour per bar kind, idle time hatched and counted per lane.
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
#include <string>
#include <utility>
#include <vector>

namespace clustersim::app {

using namespace plot_detail;

namespace {

struct KindStyle {
    std::string_view kind;
    std::string_view legend;
    const char* fill;
};

// Forward and backward in the two most distinct colours of the palette; communication in
// the cooler ones. Every fill is light or dark enough for black or white labels.
constexpr std::array<KindStyle, 8> kKinds{{
    {gantt_kind::forward, "forward", "#56B4E9"},
    {gantt_kind::backward, "backward", "#E69F00"},
    {gantt_kind::weight, "weight grad", "#F5C710"},
    {gantt_kind::recompute, "recompute", "#CC79A7"},
    {gantt_kind::optimizer, "optimizer", "#7f7f7f"},
    {gantt_kind::tp_comm, "TP comm", "#009E73"},
    {gantt_kind::pp_comm, "PP comm", "#0072B2"},
    {gantt_kind::dp_comm, "DP comm", "#D55E00"},
}};
constexpr std::array<const char*, 5> kExtraKindFills{"#F0E442", "#000000", "#9ecae1", "#b15928",
                                                     "#bdbdbd"};

/// Black or white, whichever reads better on `fill` (#rrggbb).
const char* label_color(std::string_view fill) {
    const auto channel = [&](std::size_t i) {
        return std::stoi(std::string(fill.substr(i, 2)), nullptr, 16) / 255.0;
    };
    const double lum = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
    return lum > 0.45 ? "#111111" : "#ffffff";
}

struct TimeUnit {
    double seconds;
    const char* name;
};

TimeUnit time_unit(double span_s) {
    if (span_s >= 2)
        return {1, "s"};
    if (span_s >= 2e-3)
        return {1e-3, "ms"};
    if (span_s >= 2e-6)
        return {1e-6, "\xC2\xB5s"};
    return {1e-9, "ns"};
}

/// The time span shown, in seconds, after checking the lanes and bars.
std::pair<double, double> gantt_time_range(const GanttChart& chart) {
    if (chart.width < 300)
        throw std::invalid_argument("gantt chart: too narrow (at least 300)");
    for (std::size_t l = 0; l < chart.lanes.size(); ++l)
        if (chart.lanes[l].streams.empty())
            throw std::invalid_argument("gantt chart: lane '" + chart.lanes[l].name +
                                        "' has no streams");
    double first = std::numeric_limits<double>::infinity();
    double last = -std::numeric_limits<double>::infinity();
    for (const auto& b : chart.bars) {
        if (b.lane >= chart.lanes.size() || b.stream >= chart.lanes[b.lane].streams.size())
            throw std::invalid_argument("gantt chart: bar '" + b.label + "' on no lane/stream");
        if (!std::isfinite(b.start_s) || !std::isfinite(b.end_s) || b.end_s < b.start_s)
            throw std::invalid_argument("gantt chart: bar '" + b.label +
                                        "' has a bad time interval");
        first = std::min(first, b.start_s);
        last = std::max(last, b.end_s);
    }
    double t0 = chart.start_s.value_or(chart.bars.empty() ? 0.0 : std::min(0.0, first));
    double t1 = chart.end_s.value_or(chart.bars.empty() ? 1e-3 : last);
    if (!std::isfinite(t0) || !std::isfinite(t1))
        throw std::invalid_argument("gantt chart: non-finite time range");
    if (!(t1 > t0)) {
        if (chart.start_s && chart.end_s)
            throw std::invalid_argument("gantt chart: empty time range");
        t1 = t0 + 1e-3;
    }
    return {t0, t1};
}

/// The fill of each bar kind and the legend entries (text, fill).
struct KindColours {
    std::map<std::string, std::string> fill;
    std::vector<std::pair<std::string, std::string>> legend;
};

/// Colours by kind: the standard kinds, then others in order of first appearance.
KindColours kind_colours(const GanttChart& chart) {
    KindColours out;
    std::vector<std::string> present;
    for (const auto& b : chart.bars)
        if (std::find(present.begin(), present.end(), b.kind) == present.end())
            present.push_back(b.kind);
    for (const auto& k : kKinds)
        if (std::find(present.begin(), present.end(), k.kind) != present.end()) {
            out.fill[std::string(k.kind)] = k.fill;
            out.legend.emplace_back(std::string(k.legend), k.fill);
        }
    std::size_t extra = 0;
    for (const auto& p : present)
        if (!out.fill.count(p)) {
            const char* fill = kExtraKindFills[extra++ % kExtraKindFills.size()];
            out.fill[p] = fill;
            out.legend.emplace_back(p.empty() ? "other" : p, fill);
        }
    return out;
}

/// Idle fraction per lane: the first hatched row, the busy time a union of its bars; none for
/// a lane without a hatched row.
std::vector<std::optional<double>> lane_idle_fractions(const GanttChart& chart, double t0,
                                                       double t1) {
    const double span = t1 - t0;
    std::vector<std::optional<double>> lane_idle(chart.lanes.size());
    for (std::size_t l = 0; l < chart.lanes.size(); ++l) {
        const auto& streams = chart.lanes[l].streams;
        const auto it = std::find_if(streams.begin(), streams.end(),
                                     [](const GanttStream& s) { return s.hatch_idle; });
        if (it == streams.end())
            continue;
        const auto row = static_cast<std::size_t>(it - streams.begin());
        std::vector<std::pair<double, double>> iv;
        for (const auto& b : chart.bars)
            if (b.lane == l && b.stream == row)
                iv.emplace_back(std::max(b.start_s, t0), std::min(b.end_s, t1));
        std::sort(iv.begin(), iv.end());
        double busy = 0, reach = t0;
        for (const auto& [a, e] : iv) {
            const double s = std::max(a, reach);
            if (e > s) {
                busy += e - s;
                reach = e;
            }
        }
        lane_idle[l] = std::clamp(1 - busy / span, 0.0, 1.0);
    }
    return lane_idle;
}

/// Where everything goes, in pixels.
struct GanttLayout {
    HeadingRows headings;
    double top = 0, left = 0, right = 0;
    std::vector<double> lane_top, row_h; ///< per lane: its top and the height of its rows
    double rows_bottom = 0, axis_y = 0, axis_label_y = 0, legend_y = 0, height = 0;
    std::vector<std::vector<std::size_t>> legend_rows; ///< indices into the legend; the last
                                                       ///< index past it is the idle hatch
    bool any_hatch = false;
    bool idle_column = false;
};

GanttLayout gantt_layout(const GanttChart& chart) {
    GanttLayout g;
    bool any_named_stream = false;
    double lane_w = 0, stream_w = 0;
    for (const auto& lane : chart.lanes) {
        lane_w = std::max(lane_w, text_width(lane.name, 13));
        for (const auto& s : lane.streams) {
            g.any_hatch = g.any_hatch || s.hatch_idle;
            if (!s.name.empty()) {
                any_named_stream = true;
                stream_w = std::max(stream_w, text_width(s.name, 11));
            }
        }
    }
    g.idle_column = chart.show_idle_percent && g.any_hatch;

    const double W = chart.width;
    g.headings = heading_rows(chart.title, chart.subtitle);
    g.top = g.headings.bottom + 12;
    g.left = 14 + lane_w + (any_named_stream ? 14 + stream_w : 0) + 10;
    const double idle_w = g.idle_column ? text_width("idle 100.0%", 12) + 14 : 0;
    g.right = W - 20 - idle_w;
    if (g.right - g.left < 100)
        throw std::invalid_argument("gantt chart: labels leave no room for the time axis");
    const double lane_gap = 8;
    double y = g.top;
    for (const auto& lane : chart.lanes) {
        g.lane_top.push_back(y);
        const double h = lane.streams.size() == 1 ? 30 : 20;
        g.row_h.push_back(h);
        y += h * static_cast<double>(lane.streams.size()) + lane_gap;
    }
    g.rows_bottom = chart.lanes.empty() ? g.top + 30 : y - lane_gap;
    g.axis_y = g.rows_bottom + 6;
    g.axis_label_y = g.axis_y + 8 + kTickFont + 8 + kAxisLabelFont;
    g.legend_y = g.axis_label_y + 14 + kLegendRow / 2;
    return g;
}

/// Legend rows, wrapped to the chart's width; the idle hatch last when a row is hatched.
std::vector<std::vector<std::size_t>>
gantt_legend_rows(const std::vector<std::pair<std::string, std::string>>& legend, bool any_hatch,
                  double W) {
    std::vector<std::vector<std::size_t>> legend_rows(1);
    double x = 0;
    const std::size_t n = legend.size() + (any_hatch ? 1 : 0);
    for (std::size_t i = 0; i < n; ++i) {
        const std::string text = i < legend.size() ? legend[i].first : "idle (bubble)";
        const double w = 14 + 6 + text_width(text, kLegendFont) + 22;
        if (x > 0 && x + w > W - 2 * 14) {
            legend_rows.emplace_back();
            x = 0;
        }
        legend_rows.back().push_back(i);
        x += w;
    }
    return legend_rows;
}

/// Labelled time ticks: their times in seconds (within the range itself, which is exact: the
/// bubble ends where the step ends) and their labels.
struct TimeTicks {
    std::vector<double> seconds;
    std::vector<std::string> labels;
};

TimeTicks time_ticks(double t0, double t1, const TimeUnit& unit, double left, double right) {
    const double span = t1 - t0;
    AxisTicks tt =
        plot_detail::linear_ticks(t0 / unit.seconds, t1 / unit.seconds, TickFormat::number,
                                  std::clamp(static_cast<int>((right - left) / 90), 3, 12));
    thin_labels(tt.ticks, Mapper{t0 / unit.seconds, t1 / unit.seconds, left, right, false});
    TimeTicks out;
    for (const auto& k : tt.ticks) {
        if (k.label.empty())
            continue;
        const double s = k.value * unit.seconds;
        if (s >= t0 - span * 1e-9 && s <= t1 + span * 1e-9) {
            out.seconds.push_back(std::clamp(s, t0, t1));
            out.labels.push_back(k.label);
        }
    }
    return out;
}

/// Lanes: labels, row backgrounds (hatched where idle counts), the idle column, then grid
/// lines at the time ticks.
void draw_lanes(Svg& svg, const GanttChart& chart, const GanttLayout& g,
                const std::vector<std::optional<double>>& lane_idle, const Mapper& mt,
                const TimeTicks& ticks) {
    const double left = g.left, right = g.right;
    svg.raw("<g id=\"lanes\">\n");
    for (std::size_t l = 0; l < chart.lanes.size(); ++l) {
        const auto& lane = chart.lanes[l];
        const double lt = g.lane_top[l];
        const double lh = g.row_h[l] * static_cast<double>(lane.streams.size());
        svg.text(14, lt + lh / 2 + 13 * 0.35, lane.name, 13, "start");
        for (std::size_t s = 0; s < lane.streams.size(); ++s) {
            const double rt = lt + g.row_h[l] * static_cast<double>(s);
            if (!lane.streams[s].name.empty())
                svg.text(left - 8, rt + g.row_h[l] / 2 + 11 * 0.35, lane.streams[s].name, 11, "end",
                         kMutedColor);
            if (lane.streams[s].hatch_idle)
                svg.rect(left, rt + 1, right - left, g.row_h[l] - 2, "url(#idle-hatch)");
            else
                svg.rect(left, rt + 1, right - left, g.row_h[l] - 2, "#fbfbfb");
        }
        svg.rect(left, lt, right - left, lh, "none", " stroke=\"#bbbbbb\" stroke-width=\"1\"");
        if (g.idle_column && lane_idle[l])
            svg.text(right + 8, lt + lh / 2 + 12 * 0.35,
                     fmt::format("idle {:.1f}%", *lane_idle[l] * 100), 12, "start", kMutedColor);
    }
    for (double s : ticks.seconds)
        svg.line(mt(s), g.top, mt(s), g.rows_bottom, "#000000", 1, " stroke-opacity=\"0.08\"");
    svg.raw("</g>\n");
}

/// Bars, clipped to the time range; the label only where it fits.
void draw_bars(Svg& svg, const GanttChart& chart, const GanttLayout& g, KindColours& colours,
               const Mapper& mt, double t0, double t1, const TimeUnit& unit) {
    svg.raw("<g id=\"bars\">\n");
    for (const auto& b : chart.bars) {
        const double s = std::max(b.start_s, t0), e = std::min(b.end_s, t1);
        if (e < s)
            continue;
        const double h = g.row_h[b.lane];
        double x = mt(s), w = std::max(mt(e) - x, 0.0);
        // Narrower than a pixel: widened to one, as trace viewers do, so that a short transfer
        // stays visible. The white separator between neighbours is kept only where it leaves
        // the fill visible.
        if (w < 1) {
            x = std::min(x, g.right - 1);
            w = 1;
        }
        const char* separator = w >= 3 ? " stroke=\"#ffffff\" stroke-width=\"0.75\"" : "";
        const double by = g.lane_top[b.lane] + h * static_cast<double>(b.stream) + 2;
        const std::string& fill = colours.fill[b.kind];
        svg.raw(fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}>"
                            "<title>{}{}: {:.3f}-{:.3f} {}</title></rect>\n",
                            coord(x), coord(by), coord(w), coord(h - 4), fill, separator,
                            xml_escape(b.label.empty() ? "" : b.label + " "), xml_escape(b.kind),
                            b.start_s / unit.seconds, b.end_s / unit.seconds, unit.name));
        const double font = h >= 24 ? 11 : 10;
        if (!b.label.empty() && text_width(b.label, font) + 4 <= w)
            svg.text(x + w / 2, by + (h - 4) / 2 + font * 0.36, b.label, font, "middle",
                     label_color(fill));
    }
    svg.raw("</g>\n");
}

/// The time axis, its labelled ticks and its title.
void draw_time_axis(Svg& svg, const GanttLayout& g, const Mapper& mt, const TimeTicks& ticks,
                    const TimeUnit& unit) {
    svg.raw("<g id=\"axis\">\n");
    svg.line(g.left, g.axis_y, g.right, g.axis_y, kAxisColor, 1.2);
    for (std::size_t i = 0; i < ticks.seconds.size(); ++i) {
        const double x = mt(ticks.seconds[i]);
        svg.line(x, g.axis_y, x, g.axis_y + 5, kAxisColor, 1);
        svg.text(x, g.axis_y + 8 + kTickFont, ticks.labels[i], kTickFont, "middle");
    }
    svg.text((g.left + g.right) / 2, g.axis_label_y, fmt::format("time ({})", unit.name),
             kAxisLabelFont, "middle");
    svg.raw("</g>\n");
}

void draw_gantt_legend(Svg& svg, const GanttLayout& g,
                       const std::vector<std::pair<std::string, std::string>>& legend) {
    svg.raw("<g id=\"legend\">\n");
    double ly = g.legend_y;
    for (const auto& row : g.legend_rows) {
        double x = 14;
        for (std::size_t i : row) {
            const bool idle = i >= legend.size();
            const std::string text = idle ? "idle (bubble)" : legend[i].first;
            svg.rect(x, ly - 7, 14, 14, idle ? "url(#idle-hatch)" : legend[i].second,
                     idle ? " stroke=\"#bbbbbb\" stroke-width=\"1\"" : "");
            svg.text(x + 20, ly + kLegendFont * 0.35, text, kLegendFont, "start");
            x += 14 + 6 + text_width(text, kLegendFont) + 22;
        }
        ly += kLegendRow;
    }
    svg.raw("</g>\n");
}

} // namespace

std::string render_svg(const GanttChart& chart) {
    const auto [t0, t1] = gantt_time_range(chart);
    const TimeUnit unit = time_unit(t1 - t0);
    KindColours colours = kind_colours(chart);
    const std::vector<std::optional<double>> lane_idle = lane_idle_fractions(chart, t0, t1);
    GanttLayout g = gantt_layout(chart);
    const double W = chart.width;
    g.legend_rows = gantt_legend_rows(colours.legend, g.any_hatch, W);
    g.height = g.legend_y + kLegendRow * static_cast<double>(g.legend_rows.size()) + 6;
    const Mapper mt{t0, t1, g.left, g.right, false};

    Svg svg(W, g.height);
    svg.raw("<defs><pattern id=\"idle-hatch\" patternUnits=\"userSpaceOnUse\" width=\"7\" "
            "height=\"7\" patternTransform=\"rotate(45)\"><rect x=\"0\" y=\"0\" width=\"7\" "
            "height=\"7\" fill=\"#f6f6f6\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"7\" "
            "stroke=\"#c4c4c4\" stroke-width=\"2.5\"/></pattern></defs>\n");
    if (!chart.title.empty())
        heading(svg, 14, g.headings.title_y, W - 14, chart.title, kTitleFont, kTextColor,
                " font-weight=\"bold\"");
    if (!chart.subtitle.empty())
        heading(svg, 14, g.headings.subtitle_y, W - 14, chart.subtitle, kSubtitleFont, kMutedColor);
    const TimeTicks ticks = time_ticks(t0, t1, unit, g.left, g.right);
    draw_lanes(svg, chart, g, lane_idle, mt, ticks);
    draw_bars(svg, chart, g, colours, mt, t0, t1, unit);
    draw_time_axis(svg, g, mt, ticks, unit);
    draw_gantt_legend(svg, g, colours.legend);
    return svg.finish();
}

} // namespace clustersim::app
