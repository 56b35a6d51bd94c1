// Writes the sample charts of tests/app/plot_samples.h as SVG files. Hidden ("[.]"): it runs
// only when asked, from scripts/gen-sample-charts.sh, which also screenshots them:
//   CLUSTERSIM_SAMPLE_DIR=docs/images build/test/tests/clustersim_tests "[samples]"
#include "app/output.h"
#include "app/svg_plot.h"
#include "plot_samples.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

using namespace clustersim::app;

TEST_CASE("write the sample charts", "[.][samples]") {
    const char* env = std::getenv("CLUSTERSIM_SAMPLE_DIR");
    const std::string dir = env ? env : CLUSTERSIM_SOURCE_DIR "/docs/images";
    using samples::PipelineSchedule;
    write_file_atomically(
        dir + "/sample-timeline-1f1b.svg",
        render_svg(samples::pipeline_sample(PipelineSchedule::one_f_one_b, 4, 8).chart));
    write_file_atomically(
        dir + "/sample-timeline-gpipe.svg",
        render_svg(samples::pipeline_sample(PipelineSchedule::gpipe, 4, 8, false).chart));
    write_file_atomically(dir + "/sample-scale.svg", render_svg(samples::scaling_sample()));
    write_file_atomically(dir + "/sample-bubble.svg", render_svg(samples::bubble_sample()));
    write_file_atomically(dir + "/sample-busbw.svg", render_svg(samples::busbw_sample()));
    SUCCEED("written to " + dir);
}
