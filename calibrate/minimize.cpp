#include "calibrate/minimize.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace clustersim::calibrate {

double to_unit(double x, const ParameterBounds& b) {
    if (b.hi <= b.lo)
        return 0;
    if (b.log_scale)
        return (std::log(x) - std::log(b.lo)) / (std::log(b.hi) - std::log(b.lo));
    return (x - b.lo) / (b.hi - b.lo);
}

double from_unit(double u, const ParameterBounds& b) {
    u = std::clamp(u, 0.0, 1.0);
    if (b.log_scale)
        return std::exp(std::log(b.lo) + u * (std::log(b.hi) - std::log(b.lo)));
    return b.lo + u * (b.hi - b.lo);
}

namespace {

using Point = std::vector<double>;

struct Simplex {
    std::vector<Point> points;
    std::vector<double> values;
};

} // namespace

MinimizeResult minimize_bounded(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, const std::vector<ParameterBounds>& bounds,
                                const MinimizeOptions& options) {
    const std::size_t n = bounds.size();
    if (x0.size() != n)
        throw std::invalid_argument("minimize_bounded: x0 and bounds differ in size");
    for (const auto& b : bounds)
        if (!(b.hi >= b.lo) || (b.log_scale && !(b.lo > 0)))
            throw std::invalid_argument("minimize_bounded: bad bounds");

    MinimizeResult result;
    auto to_x = [&](const Point& u) {
        Point x(n);
        for (std::size_t i = 0; i < n; ++i)
            x[i] = from_unit(u[i], bounds[i]);
        return x;
    };
    auto clamp = [](Point u) {
        for (double& v : u)
            v = std::clamp(v, 0.0, 1.0);
        return u;
    };
    auto eval = [&](const Point& u) {
        ++result.evaluations;
        const double v = f(to_x(u));
        return std::isfinite(v) ? v : 1e300;
    };

    Point best(n);
    for (std::size_t i = 0; i < n; ++i)
        best[i] =
            std::clamp(to_unit(std::clamp(x0[i], bounds[i].lo, bounds[i].hi), bounds[i]), 0.0, 1.0);
    double best_value = eval(best);
    if (n == 0) {
        result.x = to_x(best);
        result.value = best_value;
        return result;
    }

    for (int restart = 0; restart <= options.max_restarts; ++restart) {
        // A fresh simplex around the best point; an edge that would leave the box goes the
        // other way.
        Simplex s;
        s.points.push_back(best);
        s.values.push_back(best_value);
        for (std::size_t i = 0; i < n; ++i) {
            Point p = best;
            p[i] +=
                p[i] + options.initial_step <= 1.0 ? options.initial_step : -options.initial_step;
            s.points.push_back(clamp(p));
            s.values.push_back(eval(s.points.back()));
        }
        std::vector<std::size_t> order(n + 1);
        while (result.evaluations < options.max_evaluations) {
            std::iota(order.begin(), order.end(), 0);
            // Ties broken by index: deterministic.
            std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
                return s.values[a] < s.values[b];
            });
            Simplex sorted;
            for (std::size_t i : order) {
                sorted.points.push_back(s.points[i]);
                sorted.values.push_back(s.values[i]);
            }
            s = std::move(sorted);
            const double lo = s.values.front(), hi = s.values.back();
            double size = 0;
            for (std::size_t i = 1; i <= n; ++i)
                for (std::size_t j = 0; j < n; ++j)
                    size = std::max(size, std::abs(s.points[i][j] - s.points[0][j]));
            if (hi - lo <= options.tolerance * (std::abs(lo) + options.tolerance) || size < 1e-9)
                break;

            Point centroid(n, 0.0);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < n; ++j)
                    centroid[j] += s.points[i][j] / static_cast<double>(n);
            auto along = [&](double t) {
                Point p(n);
                for (std::size_t j = 0; j < n; ++j)
                    p[j] = centroid[j] + t * (s.points[n][j] - centroid[j]);
                return clamp(p);
            };
            const Point reflected = along(-1.0);
            const double fr = eval(reflected);
            if (fr < s.values[0]) {
                const Point expanded = along(-2.0);
                const double fe = eval(expanded);
                if (fe < fr) {
                    s.points[n] = expanded;
                    s.values[n] = fe;
                } else {
                    s.points[n] = reflected;
                    s.values[n] = fr;
                }
            } else if (fr < s.values[n - 1]) {
                s.points[n] = reflected;
                s.values[n] = fr;
            } else {
                const bool outside = fr < s.values[n];
                const Point contracted = along(outside ? -0.5 : 0.5);
                const double fc = eval(contracted);
                if (fc < std::min(fr, s.values[n])) {
                    s.points[n] = contracted;
                    s.values[n] = fc;
                } else {
                    for (std::size_t i = 1; i <= n; ++i) {
                        for (std::size_t j = 0; j < n; ++j)
                            s.points[i][j] =
                                s.points[0][j] + 0.5 * (s.points[i][j] - s.points[0][j]);
                        s.values[i] = eval(s.points[i]);
                    }
                }
            }
        }
        std::size_t arg = 0;
        for (std::size_t i = 1; i < s.values.size(); ++i)
            if (s.values[i] < s.values[arg])
                arg = i;
        const bool improved = s.values[arg] < best_value * (1 - 1e-9) - 1e-300;
        if (s.values[arg] < best_value) {
            best = s.points[arg];
            best_value = s.values[arg];
        }
        if (!improved || result.evaluations >= options.max_evaluations)
            break;
    }
    result.x = to_x(best);
    result.value = best_value;
    return result;
}

} // namespace clustersim::calibrate
