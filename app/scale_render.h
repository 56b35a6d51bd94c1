#pragma once
/// \file
/// How `clustersim scale` words a plan (explore::ScalePlan): the terminal table with a short
/// layout code per row, the table of where each step goes, the error band and the pick; the
/// same as CSV (one row per GPU count, nothing but a header and rows, so that a plain
/// `pandas.read_csv(path)` reads it) and as JSON (the metadata and every row).

#include "explore/scale_plan.h"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace clustersim::app {

/// What the plan does not hold but its rendering says.
struct ScaleContext {
    std::string experiment; ///< the file, as given
    std::string fidelity;   ///< "analytic" or "flow"
    bool tokens_given = false;
    bool wide = false;
    std::string price_source; ///< empty: no price
    const explore::ScaleRequest* request = nullptr;
};

/// "3.2 days", "5.0 h", "12.3 s": a time to train as the tables print it.
std::string duration(double seconds);
/// "$1,234,567": dollars, whole, with thousands separators.
std::string money(double dollars);

/// "tp8 pp16 dp4 v6 mb1 z1 full": the knobs of a layout, those at their neutral value left out
/// (cp 1, ep 1, no virtual stages, ZeRO 0, recompute none); `global_batch` adds "gb1536".
std::string layout_code(const explore::ScaleLayout& l, bool global_batch);

void print_scale_table(std::ostream& out, const strategies::parallel::ExperimentSpec& base,
                       const explore::ScalePlan& plan, const ScaleContext& context);
std::string scale_csv(const strategies::parallel::ExperimentSpec& base,
                      const explore::ScalePlan& plan, const ScaleContext& context);
nlohmann::ordered_json scale_json(const strategies::parallel::ExperimentSpec& base,
                                  const explore::ScalePlan& plan, const ScaleContext& context);

} // namespace clustersim::app
