#pragma once
/// \file
/// The terminal side of `clustersim sweep`, `scale` and `bubble`: the progress bar drawn from
/// explore's progress reports, and the table of the best rows. The engine itself (grid,
/// evaluator, CSV rows, resume, ordered output, threads) is explore/.

#include "explore/grid.h"
#include "explore/progress.h"
#include "explore/sweep_row.h"

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace clustersim::app::sweep {

/// True when `err` is the process's standard error and that is a terminal.
bool is_terminal(const std::ostream& err);

/// Draws reports on `out` as a bar: "[#####     ] 512/1200 configurations, 3,400/s", and the
/// final one as "done: 1200 configurations in 0.35 s (3400/s)".
std::function<void(const explore::ProgressReport&)> progress_bar(std::ostream& out,
                                                                 std::string what);

/// Prints the top table: rank, the varied keys, dp, step time, tokens/s, MFU, bubble, peak
/// memory and whether it fits.
void print_top(std::ostream& out, const std::vector<std::string>& columns,
               const std::vector<explore::Axis>& axes,
               const std::vector<explore::RowSummary>& rows);

} // namespace clustersim::app::sweep
