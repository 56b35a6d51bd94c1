// clustersim demo: the built-in example a newcomer sees first.
#include "app/cli.h"
#include "app/reports.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

namespace clustersim::app {

void register_demo(CLI::App& app, Io io, int& /*exit_code*/) {
    auto* cmd = app.add_subcommand("demo", "Run the built-in example");
    cmd->callback([io] {
        const auto spec = hardware::load_hardware("dgx-h100");
        fmt::print(io.out, "== clustersim hardware show dgx-h100\n\n");
        const hardware::Topology node(spec);
        print_hardware_summary(io.out, node);
        fmt::print(io.out, "\n== clustersim transfer --hardware dgx-h100 --from gpu0 --to gpu1 "
                           "--bytes 1GiB\n\n");
        print_transfer(io.out, node, 0, 1, std::int64_t{1} << 30);
        fmt::print(io.out, "\n== clustersim transfer --hardware dgx-h100 --gpus 128 --from gpu0 "
                           "--to gpu127 --bytes 1GiB\n\n");
        const hardware::Topology cluster(hardware::with_gpu_count(spec, 128));
        print_transfer(io.out, cluster, 0, 127, std::int64_t{1} << 30);
    });
}

} // namespace clustersim::app
