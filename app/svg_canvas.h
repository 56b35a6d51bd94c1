#pragma once
/// \file
/// The canvas the SVG charts of app/svg_plot.h draw on, shared by the line chart
/// (svg_plot_line.cpp) and the Gantt chart (svg_plot_gantt.cpp): the palette, fonts and
/// colours, the element writer `Svg`, the data-to-pixel `Mapper`, and headings and tick labels
/// fitted to the room they have. Internal to app/: no other module includes it.

#include "app/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::app::plot_detail {

// Okabe & Ito's colour-blind-safe palette, yellow last (weak on white as a line colour).
inline constexpr std::array<const char*, 8> kPalette{"#0072B2", "#D55E00", "#009E73", "#E69F00",
                                                     "#CC79A7", "#56B4E9", "#000000", "#F0E442"};
inline constexpr const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";
inline constexpr const char* kTextColor = "#222222";
inline constexpr const char* kMutedColor = "#555555";
inline constexpr const char* kGridColor = "#e3e3e3";
inline constexpr const char* kAxisColor = "#444444";
inline constexpr double kTitleFont = 20;
inline constexpr double kSubtitleFont = 14;
inline constexpr double kAxisLabelFont = 14;
inline constexpr double kTickFont = 12;
inline constexpr double kLegendFont = 13;
inline constexpr double kFootnoteFont = 12;
inline constexpr double kLegendRow = 20;

/// Appends SVG elements to a string.
class Svg {
public:
    Svg(double width, double height) {
        out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
        out_ += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                            "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                            "font-family=\"{2}\">\n",
                            coord(width), coord(height), kFont);
        out_ += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                            coord(width), coord(height));
    }

    void raw(std::string_view s) { out_ += s; }

    void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
              std::string_view extra = {}) {
        out_ +=
            fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                        "stroke-width=\"{}\"{}/>\n",
                        coord(x1), coord(y1), coord(x2), coord(y2), stroke, coord(width), extra);
    }

    void rect(double x, double y, double w, double h, std::string_view fill,
              std::string_view extra = {}) {
        out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>\n",
                            coord(x), coord(y), coord(w), coord(h), fill, extra);
    }

    /// `anchor`: start, middle or end. `extra`: further attributes, already formatted.
    void text(double x, double y, std::string_view content, double size, std::string_view anchor,
              std::string_view fill = kTextColor, std::string_view extra = {}) {
        out_ +=
            fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\" "
                        "fill=\"{}\"{}>{}</text>\n",
                        coord(x), coord(y), coord(size), anchor, fill, extra, xml_escape(content));
    }

    std::string finish() {
        out_ += "</svg>\n";
        return std::move(out_);
    }

private:
    std::string out_;
};

/// Maps data values to pixels along one axis.
struct Mapper {
    double d0 = 0, d1 = 1; // data range
    double p0 = 0, p1 = 1; // pixel range
    bool log = false;

    double operator()(double v) const {
        const double t = log ? (std::log(v) - std::log(d0)) / (std::log(d1) - std::log(d0))
                             : (v - d0) / (d1 - d0);
        return p0 + t * (p1 - p0);
    }
    bool contains(double v) const {
        const double lo = std::min(d0, d1), hi = std::max(d0, d1);
        const double slack = (log ? std::log(hi / lo) : hi - lo) * 1e-9;
        return log ? std::log(v / lo) >= -slack && std::log(hi / v) >= -slack
                   : v >= lo - slack && v <= hi + slack;
    }
};

/// The font size at which `text` fits in `width` pixels: `font`, or smaller down to 9 px.
double fitted_font(std::string_view text, double font, double width);

/// `text` cut at a character boundary and ended with an ellipsis where it is wider than
/// `width` at `font` pixels.
std::string fitted_text(std::string_view text, double font, double width);

/// One line of heading text at `x`, shrunk and then cut to end before `right`.
void heading(Svg& svg, double x, double y, double right, std::string_view text, double font,
             std::string_view color, std::string_view extra = {});

/// Hides the labels of a horizontal axis that would touch their neighbours: keeps every k-th
/// labelled tick for the smallest k that leaves a gap (the ticks stay, as minor ones).
void thin_labels(std::vector<Tick>& ticks, const Mapper& m);

/// Where the title and the subtitle go (their baselines) and where the text under them ends;
/// an empty heading takes no room.
struct HeadingRows {
    double title_y = 0;
    double subtitle_y = 0;
    double bottom = 0;
};
HeadingRows heading_rows(std::string_view title, std::string_view subtitle);

} // namespace clustersim::app::plot_detail
