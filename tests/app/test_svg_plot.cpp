#include "app/svg_plot.h"
#include "plot_samples.h"
#include "svg_check.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

using namespace clustersim::app;
using clustersim::test::check_svg;
using clustersim::test::SvgDoc;
using clustersim::test::SvgElement;
namespace pd = clustersim::app::plot_detail;

namespace {

std::vector<std::string> labels_of(const pd::AxisTicks& t) {
    std::vector<std::string> out;
    for (const auto& k : t.ticks)
        if (k.major)
            out.push_back(k.label);
    return out;
}

Series series(std::string name, std::vector<double> x, std::vector<double> y) {
    Series s;
    s.name = std::move(name);
    s.x = std::move(x);
    s.y = std::move(y);
    return s;
}

SvgDoc parsed(const std::string& svg) {
    SvgDoc doc = check_svg(svg);
    INFO(doc.error);
    REQUIRE(doc.error.empty());
    return doc;
}

struct Area {
    double x0, y0, x1, y1;
};

/// The plot area of a line chart: its clip rectangle.
Area clip_area(const SvgDoc& doc) {
    for (std::size_t i = 0; i + 1 < doc.elements.size(); ++i)
        if (doc.elements[i].name == "clipPath") {
            const SvgElement& r = doc.elements[i + 1];
            return {r.num("x"), r.num("y"), r.num("x") + r.num("width"),
                    r.num("y") + r.num("height")};
        }
    FAIL("no clip path");
    return {};
}

/// Centres of the markers of a line chart: circles, squares, and polygons (the mean of
/// their vertices).
std::vector<std::pair<double, double>> marker_centres(const SvgDoc& doc) {
    std::vector<std::pair<double, double>> out;
    for (const auto& e : doc.elements) {
        if (e.group != "markers")
            continue;
        if (e.name == "circle") {
            out.emplace_back(e.num("cx"), e.num("cy"));
        } else if (e.name == "rect") {
            out.emplace_back(e.num("x") + e.num("width") / 2, e.num("y") + e.num("height") / 2);
        } else if (e.name == "path") {
            std::string d = e.attrs.at("d");
            std::replace_if(
                d.begin(), d.end(), [](char c) { return c == 'M' || c == 'L' || c == 'Z'; }, ' ');
            std::istringstream in(d);
            std::vector<double> v;
            for (double x; in >> x;)
                v.push_back(x);
            double sx = 0, sy = 0;
            for (std::size_t i = 0; i + 1 < v.size(); i += 2) {
                sx += v[i];
                sy += v[i + 1];
            }
            const double n = static_cast<double>(v.size() / 2);
            out.emplace_back(sx / n, sy / n);
        }
    }
    return out;
}

/// The legend's frame, when the legend sits inside the plot area.
std::vector<const SvgElement*> legend_boxes(const SvgDoc& doc) {
    std::vector<const SvgElement*> out;
    for (const auto* r : doc.find("rect", "legend"))
        if (r->has("rx"))
            out.push_back(r);
    return out;
}

std::vector<std::string> texts(const SvgDoc& doc, const std::string& group = "*") {
    std::vector<std::string> out;
    for (const auto* t : doc.find("text", group))
        out.push_back(t->text);
    return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

} // namespace

TEST_CASE("nice steps are 1, 2 or 5 times a power of ten, closest to the target count",
          "[app][plot]") {
    // Hand-computed: the step whose interval count over the rounded-out range is nearest 6.
    CHECK(pd::nice_step(0, 1, 6) == Approx(0.2));     // 5 intervals
    CHECK(pd::nice_step(0, 123, 6) == Approx(20));    // 0..140: 7 intervals
    CHECK(pd::nice_step(0, 7, 6) == Approx(1));       // 7 intervals
    CHECK(pd::nice_step(-3.7, 12.2, 6) == Approx(5)); // -5..15: 4 intervals
    CHECK(pd::nice_step(0, 45000, 6) == Approx(1e4)); // 5 intervals
    CHECK(pd::nice_step(0, 80, 6) == Approx(20));     // 10 (8) and 20 (4) tie: the larger
    CHECK(pd::nice_step(1e-6, 7e-6, 6) == Approx(1e-6));
    CHECK_THROWS_AS(pd::nice_step(2, 1, 6), std::invalid_argument);
    CHECK_THROWS_AS(pd::nice_step(0, std::numeric_limits<double>::infinity(), 6),
                    std::invalid_argument);
}

TEST_CASE("linear ticks round the range out and label with one unit per axis", "[app][plot]") {
    SECTION("decimals follow the step; tick values are the nearest doubles") {
        const auto t = pd::linear_ticks(0, 0.3, TickFormat::number);
        CHECK(t.lo == 0);
        CHECK(t.hi == 0.3); // 6 * 0.05 computed as 30 / 100, not 0.30000000000000004
        CHECK(labels_of(t) ==
              std::vector<std::string>{"0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"});
    }
    SECTION("rounded out to whole steps") {
        const auto t = pd::linear_ticks(0, 123, TickFormat::number);
        CHECK(t.hi == 140);
        CHECK(labels_of(t).size() == 8);
    }
    SECTION("no negative zero") {
        const auto t = pd::linear_ticks(-0.5, 0.5, TickFormat::number);
        CHECK(labels_of(t) ==
              std::vector<std::string>{"-0.6", "-0.4", "-0.2", "0.0", "0.2", "0.4", "0.6"});
    }
    SECTION("SI suffix from 10,000 up, the same for the whole axis") {
        CHECK(labels_of(pd::linear_ticks(0, 45000, TickFormat::number)) ==
              std::vector<std::string>{"0", "10k", "20k", "30k", "40k", "50k"});
        CHECK(labels_of(pd::linear_ticks(0, 2.2e6, TickFormat::number)) ==
              std::vector<std::string>{"0.0", "0.5M", "1.0M", "1.5M", "2.0M", "2.5M"});
        CHECK(labels_of(pd::linear_ticks(0, 6000, TickFormat::number)).back() == "6000");
        CHECK(labels_of(pd::linear_ticks(0, 45000, TickFormat::integer)).back() == "50000");
    }
    SECTION("percent") {
        CHECK(labels_of(pd::linear_ticks(0, 1, TickFormat::percent)) ==
              std::vector<std::string>{"0%", "20%", "40%", "60%", "80%", "100%"});
        CHECK(labels_of(pd::linear_ticks(0, 0.03, TickFormat::percent)).back() == "3.0%");
    }
    SECTION("bytes step by multiples of their binary unit") {
        const double gib = 1024.0 * 1024 * 1024;
        const auto t = pd::linear_ticks(0, 80 * gib, TickFormat::bytes);
        CHECK(labels_of(t) ==
              std::vector<std::string>{"0 GiB", "20 GiB", "40 GiB", "60 GiB", "80 GiB"});
        CHECK(t.ticks[1].value == 20 * gib);
    }
    SECTION("a single value gets a range around it") {
        const auto t = pd::linear_ticks(5, 5, TickFormat::number);
        CHECK(t.lo < 5);
        CHECK(t.hi > 5);
    }
}

TEST_CASE("aligned ticks have exactly the requested number of intervals", "[app][plot]") {
    // 0.93 over 4 intervals: 0.2 falls short (0.8), 0.25 fits.
    const auto t = pd::aligned_linear_ticks(0, 0.93, 4, TickFormat::percent);
    CHECK(labels_of(t) == std::vector<std::string>{"0%", "25%", "50%", "75%", "100%"});
    const auto u = pd::aligned_linear_ticks(0, 606000, 4, TickFormat::number);
    CHECK(labels_of(u) == std::vector<std::string>{"0", "200k", "400k", "600k", "800k"});
    const auto v = pd::aligned_linear_ticks(13, 87, 7, TickFormat::number);
    CHECK(v.ticks.size() == 8);
    CHECK(v.lo <= 13);
    CHECK(v.hi >= 87);
}

TEST_CASE("log2 ticks: powers of two, every k-th labelled", "[app][plot]") {
    SECTION("GPU counts") {
        const auto t = pd::log_ticks(8, 4096, 2, TickFormat::number);
        CHECK(t.lo == 8);
        CHECK(t.hi == 4096);
        CHECK(labels_of(t) == std::vector<std::string>{"8", "16", "32", "64", "128", "256", "512",
                                                       "1K", "2K", "4K"});
        CHECK(labels_of(pd::log_ticks(8, 4096, 2, TickFormat::integer)).back() == "4096");
    }
    SECTION("every third power: 8, 64, 512, 4K") {
        const auto t = pd::log_ticks(1, std::ldexp(1.0, 21), 2, TickFormat::number);
        CHECK(labels_of(t) ==
              std::vector<std::string>{"1", "8", "64", "512", "4K", "32K", "256K", "2M"});
        CHECK(t.ticks.size() == 22); // the other powers are minor ticks
    }
    SECTION("bytes stay on KiB/MiB/GiB boundaries") {
        const auto t = pd::log_ticks(8, std::ldexp(1.0, 33), 2, TickFormat::bytes);
        CHECK(t.lo == 8);
        CHECK(t.hi == std::ldexp(1.0, 33));
        CHECK(labels_of(t) ==
              std::vector<std::string>{"32 B", "1 KiB", "32 KiB", "1 MiB", "32 MiB", "1 GiB"});
        CHECK(t.ticks.size() == 31);
    }
    SECTION("binary counts") {
        CHECK(labels_of(pd::log_ticks(1, std::ldexp(1.0, 20), 2, TickFormat::count_binary)) ==
              std::vector<std::string>{"1", "32", "1K", "32K", "1M"});
    }
    SECTION("a range inside one power is rounded out to two") {
        const auto t = pd::log_ticks(5, 6, 2, TickFormat::number);
        CHECK(t.lo == 4);
        CHECK(t.hi == 8);
    }
    SECTION("bad ranges") {
        CHECK_THROWS_AS(pd::log_ticks(0, 8, 2, TickFormat::number), std::invalid_argument);
        CHECK_THROWS_AS(pd::log_ticks(1, 8, 3, TickFormat::number), std::invalid_argument);
    }
}

TEST_CASE("log10 ticks: 1-2-5 ends, 1-2-5 labels over few decades", "[app][plot]") {
    const auto t = pd::log_ticks(9400, 606000, 10, TickFormat::number);
    CHECK(t.lo == 5000);
    CHECK(t.hi == 1e6);
    CHECK(labels_of(t) ==
          std::vector<std::string>{"5k", "10k", "20k", "50k", "100k", "200k", "500k", "1M"});
    const auto u = pd::log_ticks(3, 700, 10, TickFormat::number);
    CHECK(u.lo == 2);
    CHECK(u.hi == 1000);
    CHECK(labels_of(u) ==
          std::vector<std::string>{"2", "5", "10", "20", "50", "100", "200", "500", "1k"});
    // Eight decades: powers only, no minor ticks.
    const auto v = pd::log_ticks(1, 1e8, 10, TickFormat::number);
    CHECK(labels_of(v) ==
          std::vector<std::string>{"1", "10", "100", "1k", "10k", "100k", "1M", "10M", "100M"});
    CHECK(v.ticks.size() == 9);
    CHECK(labels_of(pd::log_ticks(1e-3, 1, 10, TickFormat::number)).front() == "0.001");
    CHECK(labels_of(pd::log_ticks(0.01, 1, 10, TickFormat::percent)).back() == "100%");
}

TEST_CASE("tick labels of single values", "[app][plot]") {
    CHECK(pd::log_label(1536, TickFormat::bytes) == "1.5 KiB");
    CHECK(pd::log_label(1, TickFormat::bytes) == "1 B");
    CHECK(pd::log_label(std::ldexp(1.0, 40), TickFormat::bytes) == "1 TiB");
    CHECK(pd::log_label(0.5, TickFormat::percent) == "50%");
    CHECK(pd::log_label(65536, TickFormat::count_binary) == "64K");
    CHECK(pd::log_label(20000, TickFormat::number) == "20k");
    CHECK(pd::log_label(0.125, TickFormat::number) == "0.125");
}

TEST_CASE("XML escaping and coordinates", "[app][plot]") {
    CHECK(pd::xml_escape("<a & 'b'>\"") == "&lt;a &amp; &apos;b&apos;&gt;&quot;");
    CHECK(pd::xml_escape("F3\x01\x1f") == "F3");                     // forbidden controls dropped
    CHECK(pd::xml_escape("a\tb\n") == "a\tb\n");                     // allowed ones kept
    CHECK(pd::xml_escape("2 \xC2\xB5s") == "2 \xC2\xB5s");           // UTF-8 kept
    CHECK(pd::xml_escape("x\xFFy") == "x\xEF\xBF\xBDy");             // invalid byte -> U+FFFD
    CHECK(pd::xml_escape("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD"); // overlong '/'
    CHECK(pd::xml_escape("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); // a surrogate
    CHECK(pd::coord(12.5) == "12.5");
    CHECK(pd::coord(3.0) == "3");
    CHECK(pd::coord(-0.001) == "0");
    CHECK(pd::coord(1.006) == "1.01");
    CHECK_THROWS_AS(pd::coord(std::nan("")), std::invalid_argument);
    CHECK(pd::text_width("F3", 11) > 10);
    CHECK(pd::text_width("W", 10) > pd::text_width("i", 10));
}

TEST_CASE("line charts are well-formed, deterministic and keep data inside", "[app][plot]") {
    for (const LineChart& chart :
         {samples::scaling_sample(), samples::bubble_sample(), samples::busbw_sample()}) {
        const std::string svg = render_svg(chart);
        CHECK(render_svg(LineChart(chart)) == svg);
        const SvgDoc doc = parsed(svg);
        const SvgElement& root = doc.elements.front();
        CHECK(root.attrs.at("viewBox") == "0 0 1000 600");
        CHECK(root.attrs.at("version") == "1.1");
        CHECK(root.attrs.at("font-family").find("sans-serif") != std::string::npos);

        // Every point is drawn, inside the plot area.
        std::size_t points = 0;
        for (const auto& s : chart.series)
            points += s.markers ? s.x.size() : 0;
        const auto centres = marker_centres(doc);
        CHECK(centres.size() == points);
        const Area a = clip_area(doc);
        for (const auto& [x, y] : centres) {
            CHECK(x >= a.x0);
            CHECK(x <= a.x1);
            CHECK(y >= a.y0);
            CHECK(y <= a.y1);
        }
        // One line per series, one legend entry per series.
        CHECK(doc.find("path", "data").size() == chart.series.size());
        CHECK(doc.find("text", "legend").size() == chart.series.size());
        // The legend box, when inside, covers no marker.
        for (const auto* box : legend_boxes(doc)) {
            const double x0 = box->num("x"), y0 = box->num("y");
            const double x1 = x0 + box->num("width"), y1 = y0 + box->num("height");
            for (const auto& [x, y] : centres)
                CHECK_FALSE((x > x0 && x < x1 && y > y0 && y < y1));
        }
        CHECK(contains(texts(doc), chart.title));
    }
}

TEST_CASE("line chart details", "[app][plot]") {
    SECTION("a second axis shares the grid: 0-100% beside 0-800k") {
        LineChart c = samples::scaling_sample();
        c.y.scale = AxisScale::linear;
        c.y2->min.reset();
        c.y2->max.reset();
        const SvgDoc doc = parsed(render_svg(c));
        const auto t = texts(doc, "axes");
        CHECK(contains(t, "800k"));
        CHECK(contains(t, "100%"));
        CHECK(contains(t, "25%"));
        CHECK_FALSE(contains(t, "120%"));
        CHECK(contains(texts(doc, "legend"), "efficiency (right axis)"));
    }
    SECTION("the legend leaves the plot area when no corner is free") {
        LineChart c;
        Series zig = series("zig-zag over the whole plot", {}, {});
        for (int i = 0; i <= 40; ++i) {
            zig.x.push_back(i);
            zig.y.push_back(i % 2);
        }
        c.series = {zig};
        const SvgDoc doc = parsed(render_svg(c));
        CHECK(legend_boxes(doc).empty());
        const Area a = clip_area(doc);
        for (const auto* t : doc.find("text", "legend"))
            CHECK(t->num("y") > a.y1);
    }
    SECTION("points that a log axis cannot show are skipped, and break the line") {
        LineChart c;
        c.y.scale = AxisScale::log10;
        c.series = {series("s", {1, 2, 3, 4, 5, 6},
                           {1, 10, 0, -5, std::numeric_limits<double>::quiet_NaN(), 100})};
        const SvgDoc doc = parsed(render_svg(c));
        CHECK(marker_centres(doc).size() == 3);
        CHECK(doc.find("path", "data").size() == 1); // the lone last point makes no line
    }
    SECTION("text is escaped") {
        LineChart c;
        c.title = "a < b & \"c\"";
        c.series = {series("x<y", {1, 2}, {1, 2})};
        const std::string svg = render_svg(c);
        CHECK(svg.find("a &lt; b &amp; &quot;c&quot;") != std::string::npos);
        const SvgDoc doc = parsed(svg);
        CHECK(contains(texts(doc), "a < b & \"c\""));
    }
    SECTION("a narrow chart thins its x labels and shrinks its title instead of overlapping") {
        LineChart c = samples::busbw_sample();
        c.width = 340;
        c.height = 300;
        c.title = "a title far too long for a chart of this width, which must still fit";
        const SvgDoc doc = parsed(render_svg(c));
        std::vector<const SvgElement*> labels;
        double axis_y = 0;
        for (const auto* t : doc.find("text", "axes"))
            if (t->attrs.at("text-anchor") == "middle" && !t->has("transform") &&
                t->text.find('B') != std::string::npos)
                labels.push_back(t);
        REQUIRE(labels.size() >= 2);
        for (std::size_t i = 0; i + 1 < labels.size(); ++i) {
            const double gap = labels[i + 1]->num("x") - labels[i]->num("x") -
                               (pd::text_width(labels[i]->text, labels[i]->num("font-size")) +
                                pd::text_width(labels[i + 1]->text, labels[i]->num("font-size"))) /
                                   2;
            CHECK(gap >= 8);
            axis_y = labels[i]->num("y");
        }
        CHECK(axis_y > 0);
        const auto* title = doc.find("text").front();
        // Shrunk to the smallest font, then cut with an ellipsis.
        CHECK(title->num("font-size") == 9);
        CHECK(title->text.rfind("a title far too long", 0) == 0);
        CHECK(title->text != c.title);
        CHECK(title->text.substr(title->text.size() - 3) == "\xE2\x80\xA6");
        CHECK(title->num("x") + pd::text_width(title->text, 9) <= 340 - 10);
    }
    SECTION("an empty chart still renders") {
        const SvgDoc doc = parsed(render_svg(LineChart{}));
        CHECK(doc.find("path", "data").empty());
    }
    SECTION("series of one group share a colour") {
        const SvgDoc doc = parsed(render_svg(samples::bubble_sample()));
        const auto paths = doc.find("path", "data");
        // Series order: GPipe, 1F1B, interleaved, GPipe closed form, interleaved closed form.
        std::vector<std::string> strokes;
        for (const auto* p : paths)
            if (p->has("stroke") && p->attrs.at("stroke") != "#ffffff")
                strokes.push_back(p->attrs.at("stroke"));
        REQUIRE(strokes.size() >= 5);
        CHECK(strokes[3] == strokes[0]);
        CHECK(strokes[4] == strokes[2]);
        CHECK(strokes[0] != strokes[1]);
        CHECK(paths[3]->has("stroke-dasharray"));
    }
    SECTION("bad input") {
        LineChart c;
        c.series = {series("s", {1, 2}, {1})};
        CHECK_THROWS_AS(render_svg(c), std::invalid_argument);
        c.series = {series("s", {1, 2}, {1, 2})};
        c.y.min = 3;
        c.y.max = 3;
        CHECK_THROWS_AS(render_svg(c), std::invalid_argument);
        c.y = Axis{};
        c.x.scale = AxisScale::log2;
        c.x.min = 0;
        CHECK_THROWS_AS(render_svg(c), std::invalid_argument);
    }
}

namespace {

GanttChart two_bar_chart() {
    GanttChart g;
    g.lanes = {GanttLane{"stage 0 / GPU 0", {GanttStream{}}}};
    g.bars = {{0, 0, 0.0, 1e-3, "forward", "F0"}, {0, 0, 2e-3, 3e-3, "backward", "B0"}};
    g.end_s = 4e-3;
    return g;
}

} // namespace

TEST_CASE("Gantt charts: bars inside the time axis, hatched idle time, legend", "[app][plot]") {
    const auto sample = samples::pipeline_sample(samples::PipelineSchedule::one_f_one_b, 4, 8);
    const std::string svg = render_svg(sample.chart);
    CHECK(render_svg(GanttChart(sample.chart)) == svg);
    const SvgDoc doc = parsed(svg);

    // The idle hatching spans the time axis of every compute row.
    const auto rows = doc.find("rect", "lanes");
    std::vector<const SvgElement*> hatched;
    for (const auto* r : rows)
        if (r->attrs.at("fill") == "url(#idle-hatch)")
            hatched.push_back(r);
    REQUIRE(hatched.size() == 4);
    const double x0 = hatched[0]->num("x");
    const double x1 = x0 + hatched[0]->num("width");

    const auto bars = doc.find("rect", "bars");
    CHECK(bars.size() == sample.chart.bars.size());
    for (const auto* b : bars) {
        CHECK(b->num("x") >= x0 - 1e-9);
        CHECK(b->num("x") + b->num("width") <= x1 + 0.011); // two-decimal rounding
        CHECK(b->num("width") >= 0);
    }
    // Colours by kind.
    std::set<std::string> fills;
    for (const auto* b : bars)
        fills.insert(b->attrs.at("fill"));
    CHECK(fills == std::set<std::string>{"#56B4E9", "#E69F00", "#7f7f7f", "#0072B2", "#D55E00"});
    const auto legend = texts(doc, "legend");
    CHECK(legend == std::vector<std::string>{"forward", "backward", "optimizer", "PP comm",
                                             "DP comm", "idle (bubble)"});
    // Micro-batch labels fit in forward and backward bars at this size.
    const auto bar_texts = texts(doc, "bars");
    CHECK(contains(bar_texts, "F7"));
    CHECK(contains(bar_texts, "B7"));
    CHECK(contains(texts(doc, "axis"), "time (ms)"));
    CHECK(contains(texts(doc), sample.chart.subtitle));
    CHECK(sample.bubble_closed_form == Approx(3.0 / 11));
}

TEST_CASE("Gantt chart details", "[app][plot]") {
    SECTION("idle percentage: the union of the bars over the time range") {
        GanttChart g = two_bar_chart();
        CHECK(contains(texts(parsed(render_svg(g)), "lanes"), "idle 50.0%"));
        g.bars.push_back({0, 0, 0.5e-3, 2.5e-3, "recompute", "R0"}); // overlaps both
        CHECK(contains(texts(parsed(render_svg(g)), "lanes"), "idle 25.0%"));
        g.show_idle_percent = false;
        for (const auto& t : texts(parsed(render_svg(g)), "lanes"))
            CHECK(t.rfind("idle", 0) != 0);
    }
    SECTION("labels only where they fit") {
        GanttChart g = two_bar_chart();
        g.bars.push_back({0, 0, 3.5e-3, 3.5001e-3, "forward", "F1"});
        const auto t = texts(parsed(render_svg(g)), "bars");
        CHECK(contains(t, "F0"));
        CHECK_FALSE(contains(t, "F1"));
    }
    SECTION("the time unit follows the span") {
        GanttChart g = two_bar_chart();
        g.end_s = 5e-4;
        g.bars = {{0, 0, 0, 1e-4, "forward", "F0"}};
        CHECK(contains(texts(parsed(render_svg(g)), "axis"), "time (\xC2\xB5s)"));
        g.end_s = 3.5;
        CHECK(contains(texts(parsed(render_svg(g)), "axis"), "time (s)"));
    }
    SECTION("other kinds take palette colours and their own legend entry") {
        GanttChart g = two_bar_chart();
        g.bars.push_back({0, 0, 3e-3, 3.5e-3, "embedding & loss", ""});
        const SvgDoc doc = parsed(render_svg(g));
        CHECK(contains(texts(doc, "legend"), "embedding & loss"));
        CHECK(doc.find("rect", "bars").back()->attrs.at("fill") == "#F0E442");
    }
    SECTION("bars beyond a forced range are clipped to it") {
        GanttChart g = two_bar_chart();
        g.end_s = 2.5e-3;
        const SvgDoc doc = parsed(render_svg(g));
        const auto bars = doc.find("rect", "bars");
        const auto* lane = doc.find("rect", "lanes").front();
        CHECK(bars.back()->num("x") + bars.back()->num("width") <=
              lane->num("x") + lane->num("width") + 0.011);
    }
    SECTION("bad input") {
        GanttChart g = two_bar_chart();
        g.bars.push_back({1, 0, 0, 1e-3, "forward", "F9"});
        CHECK_THROWS_AS(render_svg(g), std::invalid_argument);
        g = two_bar_chart();
        g.bars.push_back({0, 1, 0, 1e-3, "forward", "F9"});
        CHECK_THROWS_AS(render_svg(g), std::invalid_argument);
        g = two_bar_chart();
        g.bars.push_back({0, 0, 2e-3, 1e-3, "forward", "F9"});
        CHECK_THROWS_AS(render_svg(g), std::invalid_argument);
        g = two_bar_chart();
        g.bars.push_back({0, 0, std::nan(""), 1e-3, "forward", "F9"});
        CHECK_THROWS_AS(render_svg(g), std::invalid_argument);
        g = two_bar_chart();
        g.lanes[0].streams.clear();
        CHECK_THROWS_AS(render_svg(g), std::invalid_argument);
    }
    SECTION("no lanes, no bars: an empty chart") {
        CHECK(parsed(render_svg(GanttChart{})).find("rect", "bars").empty());
    }
}
