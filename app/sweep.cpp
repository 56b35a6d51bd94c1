#include "app/sweep.h"

#include "explore/sweep_row.h"

#include "base/text.h"
#include "base/units.h"
#include "sim/time.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <unistd.h>

namespace clustersim::app::sweep {

bool is_terminal(const std::ostream& err) {
    return &err == &std::cerr && ::isatty(STDERR_FILENO) != 0;
}

std::function<void(const explore::ProgressReport&)> progress_bar(std::ostream& out,
                                                                 std::string what) {
    return [&out, what = std::move(what)](const explore::ProgressReport& r) {
        if (r.final) {
            fmt::print(out, "\r{}\rdone: {} {} in {:.2f} s ({:.0f}/s)\n", std::string(80, ' '),
                       r.total, what, r.elapsed_s, r.rate());
            return;
        }
        constexpr int kWidth = 30;
        const int filled = static_cast<int>(kWidth * r.done / r.total);
        fmt::print(out, "\r[{}{}] {}/{} {}, {:.0f}/s ",
                   std::string(static_cast<std::size_t>(filled), '#'),
                   std::string(static_cast<std::size_t>(kWidth - filled), ' '), r.done, r.total,
                   what, r.rate());
        out.flush();
    };
}

void print_top(std::ostream& out, const std::vector<std::string>& columns,
               const std::vector<explore::Axis>& axes,
               const std::vector<explore::RowSummary>& rows) {
    const std::size_t n = columns.size();
    std::vector<std::string> head{"#", "config"};
    for (const explore::Axis& a : axes)
        head.push_back(a.key);
    for (const char* h :
         {"tp x pp x dp", "mb x m", "step time", "tokens/s", "MFU", "bubble", "peak GB", "fits"})
        head.push_back(h);
    std::vector<std::vector<std::string>> table;
    int rank = 0;
    for (const explore::RowSummary& r : rows) {
        const auto& f = r.fields;
        auto at = [&](const char* name) { return f[explore::result_column(n, name)]; };
        std::vector<std::string> line{std::to_string(++rank), f[0]};
        for (std::size_t k = 0; k < axes.size(); ++k)
            line.push_back(f[1 + k]);
        line.push_back(at("tp") + " x " + at("pp") + " x " + at("dp"));
        line.push_back(at("micro_batch") + " x " + at("micro_batches"));
        line.push_back(
            base::format_time(sim::Time::from_seconds(explore::result_number(at("step_time_s")))));
        line.push_back(fmt::format("{:.0f}", r.tokens_per_s));
        line.push_back(base::percent(explore::result_number(at("mfu"))));
        line.push_back(base::percent(explore::result_number(at("bubble_fraction"))));
        line.push_back(fmt::format("{:.1f}", explore::result_number(at("peak_bytes")) / 1e9));
        line.push_back(r.oom ? "OOM" : "yes");
        table.push_back(std::move(line));
    }
    std::vector<std::size_t> width(head.size());
    for (std::size_t c = 0; c < head.size(); ++c) {
        width[c] = head[c].size();
        for (const auto& line : table)
            width[c] = std::max(width[c], line[c].size());
    }
    auto print_line = [&](const std::vector<std::string>& cells) {
        std::string s;
        for (std::size_t c = 0; c < cells.size(); ++c)
            s += (c == 0 ? "" : "  ") + fmt::format("{:>{}}", cells[c], width[c]);
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        out << s << "\n";
    };
    print_line(head);
    for (const auto& line : table)
        print_line(line);
}

} // namespace clustersim::app::sweep
