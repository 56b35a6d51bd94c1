#pragma once
/// \file
/// The one statistics type of prediction errors (error = predicted / measured - 1): what
/// `validate`, `calibrate fit`, the fitted file's comments and every validation report
/// summarise a set of points with.

#include <vector>

namespace clustersim::calibrate {

/// Count, mean, mean |e| and largest |e| of a set of errors. All zero when there are none.
struct ErrorStats {
    int points = 0;
    double mean = 0;     ///< signed: whether the model is fast or slow on the whole
    double mean_abs = 0; ///< the accuracy figure the reports and thresholds use
    double max_abs = 0;
};

/// The statistics of `errors`, summed in their order (so a report reads the same every time).
ErrorStats error_stats(const std::vector<double>& errors);

} // namespace clustersim::calibrate
