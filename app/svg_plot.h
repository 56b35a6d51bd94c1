#pragma once
/// \file
/// SVG charts drawn by clustersim itself: line charts (scaling, bubble fraction against
/// micro-batches, bandwidth against message size) and Gantt charts (a pipeline-parallel step).
///
/// The callers fill plain structs with data and call `render_svg`; layout, ticks, colours and
/// legends are decided here. Fill the structs field by field (`Series s; s.name = ...`): GCC's
/// -Wextra warns on brace initialisers that leave fields out, designated ones included.
///
/// The output is one self-contained SVG 1.1 document (no scripts, no external fonts or
/// images), deterministic byte for byte: numbers are printed with fixed precision by fmt (no
/// locale), the iteration order is the order of the input, and nothing depends on time or
/// addresses. Write it with `app::write_file_atomically`.
///
/// No Debian package offers a C++ SVG plotting library that fits (libplot and PLplot draw
/// through C device drivers with their own fonts and layout, gnuplot-iostream needs the gnuplot
/// program), so this is a small one written for the charts clustersim draws.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::app {

/// How values map to positions along an axis.
enum class AxisScale { linear, log2, log10 };

/// How tick labels are written.
enum class TickFormat {
    /// 0, 2.5, 5000, 20k, 1.5M: on linear axes one SI suffix per axis from 10,000 up; on log
    /// axes a suffix from 1000 up, binary (4K) for multiples of 1024, SI (5k) otherwise
    number,
    integer,      ///< plain numbers, never a suffix: 1024, 2048, 4096 GPUs
    count_binary, ///< powers of 1024 as K/M/G: 8, 64, 512, 4K, 32K, 1M (log2 axes of counts)
    bytes,        ///< 512 B, 4 KiB, 1 MiB, 2 GiB (binary units)
    percent,      ///< a fraction written as a percentage: 0.25 -> 25%
};

/// One axis of a line chart.
struct Axis {
    std::string label; ///< with its unit, e.g. "throughput (tokens/s)"
    AxisScale scale = AxisScale::linear;
    TickFormat format = TickFormat::number;
    /// Forced range; unset ends follow the data (rounded out to ticks).
    std::optional<double> min;
    std::optional<double> max;
    /// Linear axes start at zero unless the data are negative: a bar of 80% should not look
    /// like half a bar of 90%. Ignored on log axes.
    bool include_zero = true;
};

enum class LineStyle { solid, dashed, dotted };

/// One line of a line chart.
struct Series {
    std::string name; ///< the legend entry
    std::vector<double> x;
    std::vector<double> y; ///< same length as x
    LineStyle line = LineStyle::solid;
    bool markers = true;
    /// Plotted against the second y axis (`LineChart::y2`); its legend entry says so.
    bool right_axis = false;
    /// Series of one group share a colour and a marker shape (a simulation and its closed
    /// form, say). Empty: the series is its own group. Groups take colours in order of first
    /// appearance.
    std::string group;
};

/// A line chart with an optional second y axis. Points that are not finite, or not positive
/// on a log axis, are skipped and break the line.
struct LineChart {
    std::string title;
    std::string subtitle; ///< one line of grey text under the title
    std::string footnote; ///< one line of small text under the chart (e.g. the closed forms)
    Axis x;
    Axis y;
    /// The right-hand axis. When its range is not forced, its ticks are aligned with the left
    /// axis's grid lines.
    std::optional<Axis> y2;
    std::vector<Series> series;
    int width = 1000;
    int height = 600;
};

/// Standard bar kinds of a Gantt chart; each has a fixed colour and legend name. Other kinds
/// are allowed and take the remaining palette colours in order of first appearance.
namespace gantt_kind {
inline constexpr std::string_view forward = "forward";
inline constexpr std::string_view backward = "backward";
inline constexpr std::string_view recompute = "recompute";
inline constexpr std::string_view weight =
    "weight"; ///< weight-gradient pass (W) of a split backward
inline constexpr std::string_view optimizer = "optimizer";
inline constexpr std::string_view tp_comm = "tp-comm";
inline constexpr std::string_view pp_comm = "pp-comm";
inline constexpr std::string_view dp_comm = "dp-comm";
} // namespace gantt_kind

/// One row of a lane (a CUDA stream of a simulated GPU).
struct GanttStream {
    std::string name; ///< "compute", "TP comm", ...; empty for a lane with a single row
    /// Idle time on this row is hatched (the pipeline bubble). Usually the compute stream only:
    /// communication streams are idle most of the time by design.
    bool hatch_idle = true;
};

/// One lane: a pipeline stage (its representative GPU), with one row per stream.
struct GanttLane {
    std::string name; ///< "stage 0 / GPU 0"
    std::vector<GanttStream> streams{GanttStream{}};
};

/// One busy interval on one row.
struct GanttBar {
    std::size_t lane = 0;
    std::size_t stream = 0; ///< index into the lane's streams
    double start_s = 0;
    double end_s = 0;
    std::string kind;  ///< picks the colour: see gantt_kind
    std::string label; ///< drawn inside the bar when it fits, e.g. "F3", "B3"
};

/// A Gantt chart: lanes top to bottom, time left to right. The height follows from the number
/// of rows. Each lane whose rows hatch idle time gets its idle percentage at the right.
struct GanttChart {
    std::string title;
    std::string subtitle; ///< e.g. "1F1B, p=4, m=8: bubble 27%"
    std::vector<GanttLane> lanes;
    std::vector<GanttBar> bars;
    /// Time span shown; unset: from min(0, first start) to the last end. Set `end_s` to the
    /// step time when the step ends after the last bar.
    std::optional<double> start_s;
    std::optional<double> end_s;
    bool show_idle_percent = true;
    int width = 1000;
};

/// Renders the chart. Throws std::invalid_argument for inconsistent data (x and y of
/// different lengths, a bar out of range or ending before it starts, non-finite times,
/// a forced axis range that is empty).
std::string render_svg(const LineChart& chart);
std::string render_svg(const GanttChart& chart);

/// Building blocks, exposed for tests.
namespace plot_detail {

/// A tick on an axis; minor ticks have no label and no grid line.
struct Tick {
    double value = 0;
    std::string label;
    bool major = true;
};

/// The range an axis shows (tick-aligned) and its ticks.
struct AxisTicks {
    double lo = 0;
    double hi = 1;
    std::vector<Tick> ticks;
};

/// The 1-2-5 step (times a power of ten) giving a number of intervals over [lo, hi] closest
/// to `target`.
double nice_step(double lo, double hi, int target);

/// Linear ticks covering [lo, hi] with a 1-2-5 step; the range is rounded out to ticks.
AxisTicks linear_ticks(double lo, double hi, TickFormat format, int target = 6);

/// Linear ticks with exactly `intervals` intervals covering [lo, hi] (a second axis aligned
/// with the first's grid), with the smallest 1-2-5 step that fits.
AxisTicks aligned_linear_ticks(double lo, double hi, int intervals, TickFormat format);

/// Log ticks covering [lo, hi] (both > 0). Base 2: the range is rounded out to powers of two,
/// labelled every k-th power when there are more than `max_labels` (the rest are minor ticks).
/// Base 10: the range is rounded out to 1, 2 or 5 times a power of ten; powers are labelled,
/// and 2x and 5x too when that stays within `max_labels`; other integer multiples are minor.
AxisTicks log_ticks(double lo, double hi, int base, TickFormat format, int max_labels = 10);

/// Labels for linear ticks `values` spaced `step` apart (one unit for the whole axis).
std::vector<std::string> linear_labels(const std::vector<double>& values, double step,
                                       TickFormat format);

/// Label of one value on a log axis.
std::string log_label(double value, TickFormat format);

/// Text escaped for XML character data and attribute values; control characters that XML 1.0
/// forbids are dropped and invalid UTF-8 bytes become U+FFFD.
std::string xml_escape(std::string_view text);

/// A coordinate with at most two decimals, trailing zeros removed, never "-0".
std::string coord(double v);

/// An estimate of the width in pixels of `text` in a sans-serif font of `font_px` (no font
/// metrics are available; the estimate errs wide so that labels do not collide).
double text_width(std::string_view text, double font_px);

} // namespace plot_detail

} // namespace clustersim::app
