// The fitted hardware file: BASE extended with the fitted keys only, each with a comment saying
// where it came from, then the `calibration:` and `uncertainty:` sections the loader keeps.
#include "base/text.h"
#include "calibrate/fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace clustersim::calibrate {
namespace {

/// A YAML double-quoted string (JSON escapes are valid YAML escapes).
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20)
                out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
            else
                out += c;
        }
    }
    return out + "\"";
}

std::string pct(double x) {
    return base::percent_number(x, 2);
}

/// The fitted keys as a tree, children in the order they first appear.
struct KeyNode {
    std::string name;
    std::string value; ///< leaves only
    std::string comment;
    std::vector<std::unique_ptr<KeyNode>> children;

    KeyNode& child(const std::string& n) {
        for (auto& c : children)
            if (c->name == n)
                return *c;
        children.push_back(std::make_unique<KeyNode>());
        children.back()->name = n;
        return *children.back();
    }
};

void emit(std::string& out, const KeyNode& node, int depth) {
    const std::string indent(static_cast<std::size_t>(2 * depth), ' ');
    for (const auto& c : node.children) {
        if (c->children.empty()) {
            out += fmt::format("{}{}: {}", indent, c->name, c->value);
            if (!c->comment.empty())
                out += "  # " + c->comment;
            out += "\n";
        } else {
            out += fmt::format("{}{}:\n", indent, c->name);
            emit(out, *c, depth + 1);
        }
    }
}

std::string band_line(const char* kind, const strategies::parallel::ResidualBand& b) {
    return fmt::format("  {}: {{points: {}, p10: {:.4f}, p50: {:.4f}, p90: {:.4f}}}\n", kind,
                       b.points, b.p10, b.p50, b.p90);
}

} // namespace

std::string format_fitted_hardware(const FitResult& result, const std::string& extends,
                                   const std::string& name) {
    std::string out;
    std::vector<std::string> files;
    for (const auto& part : result.parts)
        for (const auto& f : part.files)
            if (std::find(files.begin(), files.end(), f) == files.end())
                files.push_back(f);
    out += fmt::format("# {} calibrated by `clustersim calibrate fit` on {}.\n", extends,
                       base::join(files, ", "));
    out += "# It extends the base and overrides only the fitted keys; `calibration:` records each\n"
           "# value's data and residual error (|predicted / measured - 1|), `uncertainty:` the\n"
           "# spread of measured / predicted - 1 that `run` and `collective` report as a band.\n";
    for (const auto& part : result.parts) {
        out += fmt::format("# {}: {} point{}", part.name, part.points, part.points == 1 ? "" : "s");
        if (part.points > 0)
            out += fmt::format(", mean |error| {}% -> {}%, max {}% -> {}% ({})",
                               pct(part.before.mean_abs), pct(part.after.mean_abs),
                               pct(part.before.max_abs), pct(part.after.max_abs), part.method);
        out += "\n";
        for (const auto& n : part.notes)
            out += "#   " + n + "\n";
    }
    out += fmt::format("extends: {}\n", extends);
    out += fmt::format("name: {}\n", name);
    out += fmt::format("description: {}\n",
                       quoted(result.fitted.cluster.node.gpu.name + " node (" + extends +
                              ") calibrated on " + base::join(files, ", ")));

    KeyNode root;
    for (const auto& r : result.records) {
        KeyNode* node = &root;
        std::size_t start = 0;
        while (true) {
            const std::size_t dot = r.key.find('.', start);
            node = &node->child(r.key.substr(start, dot - start));
            if (dot == std::string::npos)
                break;
            start = dot + 1;
        }
        node->value = r.value;
        node->comment = fmt::format("fit ({}, {} points): mean |error| {}%, max {}%", r.method,
                                    r.points, pct(r.mean_abs_error), pct(r.max_abs_error));
    }
    emit(out, root, 0);

    out += "\n# Where each fitted value came from.\ncalibration:\n";
    for (const auto& r : result.records) {
        std::vector<std::string> q;
        for (const auto& f : r.files)
            q.push_back(quoted(f));
        out +=
            fmt::format("  - key: {}\n    value: {}\n    method: {}\n    files: [{}]\n"
                        "    points: {}\n    mean_abs_error_pct: {}\n    max_abs_error_pct: {}\n",
                        r.key, r.value, r.method, base::join(q, ", "), r.points,
                        pct(r.mean_abs_error), pct(r.max_abs_error));
    }

    const auto& u = result.uncertainty;
    if (u.present()) {
        out += fmt::format("\n# measured / predicted - 1 of this file's predictions on {} ({}):\n"
                           "# a prediction p is within [p (1 + p10), p (1 + p90)] for 80% of "
                           "those points.\n",
                           base::join(result.uncertainty_files, ", "), u.basis);
        out += "uncertainty:\n";
        out += fmt::format("  basis: {}\n", u.basis);
        if (u.collectives.present())
            out += band_line("collectives", u.collectives);
        if (u.gemms.present())
            out += band_line("gemms", u.gemms);
        if (u.steps.present())
            out += band_line("steps", u.steps);
        if (!u.collective_bands.empty()) {
            out += "  # collectives by regime (latency-bound: the predicted time is at most twice "
                   "its\n  # latency term) and GPU count; a prediction uses its own when it has "
                   "at least " +
                   std::to_string(strategies::parallel::kMinRegimeBandPoints) + " points\n";
            out += "  collective_bands:\n";
            for (const auto& r : u.collective_bands)
                out += fmt::format("    - {{regime: {}, gpus: {}, points: {}, p10: {:.4f}, "
                                   "p50: {:.4f}, p90: {:.4f}}}\n",
                                   strategies::parallel::to_string(r.regime), r.gpus, r.band.points,
                                   r.band.p10, r.band.p50, r.band.p90);
        }
    }
    return out;
}

} // namespace clustersim::calibrate
