// clustersim._core: the C++ side of the `clustersim` Python module (python/clustersim/__init__.py
// is its face). Each function is the library call the command makes, with the command's checks
// and messages: run (results::step_json), collective (results::CollectiveSweep), sweep
// (explore::SweepSetup, the CSV's rows), scale (explore::search_scale). Records come back as
// JSON text (run, collective: the bytes `--format json` prints, so a dict equals json.loads of
// the command's output) or as columns and typed rows (sweep, scale: the CSV's fields as numbers,
// booleans, strings or None, the columns of seconds and rates always floats). InputError becomes
// clustersim.InputError with the file, line, column and key where the library knew them. The GIL is
// released while the simulator runs.
#include "base/error.h"
#include "config/preset.h"
#include "explore/evaluator.h"
#include "explore/grid.h"
#include "explore/scale_plan.h"
#include "explore/sweep_row.h"
#include "explore/sweep_setup.h"
#include "explore/thread_pool.h"
#include "results/collective_table.h"
#include "results/step_json.h"
#include "strategies/collectives/collective.h"
#include "strategies/models/model_spec.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/experiment_variants.h"
#include "strategies/parallel/training_step.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace clustersim::python {

namespace {

namespace sp = strategies::parallel;

using Pairs = std::vector<std::pair<std::string, std::string>>;

sp::Fidelity sweep_fidelity(const std::string& name) {
    if (name == "analytic")
        return sp::Fidelity::analytic;
    if (name == "flow")
        return sp::Fidelity::flow;
    throw InputError("fidelity: expected analytic or flow, got '" + name + "'");
}

/// A field of the sweep's CSV as pandas.read_csv types it: empty -> None, an integer -> int, a
/// number -> float, true/false -> bool, anything else -> str.
py::object typed(const std::string& field) {
    if (field.empty())
        return py::none();
    const char* begin = field.data();
    const char* end = begin + field.size();
    std::int64_t i = 0;
    if (auto [p, ec] = std::from_chars(begin, end, i); ec == std::errc() && p == end)
        return py::int_(i);
    double d = 0;
    if (auto [p, ec] = std::from_chars(begin, end, d); ec == std::errc() && p == end)
        return py::float_(d);
    if (field == "true" || field == "false")
        return py::bool_(field == "true");
    return py::str(field);
}

/// A field of column `name`, typed: a result column by its declared type (explore/sweep_row.h;
/// so a 0 in a column of seconds is a float), a varied key's value by what it reads as.
py::object typed(const std::string& name, const std::string& field) {
    const auto type = explore::result_column_type(name);
    if (!type || field.empty())
        return typed(field);
    switch (*type) {
    case explore::ColumnType::integer:
    case explore::ColumnType::text:
        return typed(field);
    case explore::ColumnType::real:
        return py::float_(std::stod(field));
    case explore::ColumnType::boolean:
        return py::bool_(field == "true");
    }
    return typed(field);
}

/// A CSV row of `columns` as a list of typed values.
py::list typed_row(const std::string& row, const std::vector<std::string>& columns) {
    const std::vector<std::string> fields = explore::split_csv(row);
    if (fields.size() != columns.size())
        throw std::logic_error("sweep: a row with " + std::to_string(fields.size()) +
                               " fields, expected " + std::to_string(columns.size()));
    py::list out;
    for (std::size_t c = 0; c < fields.size(); ++c)
        out.append(typed(columns[c], fields[c]));
    return out;
}

std::string run(const std::string& experiment, const Pairs& overrides,
                const std::string& fidelity) {
    const auto choice = strategies::collectives::parse_fidelity(fidelity);
    if (!choice)
        throw InputError("fidelity: expected analytic, flow or flow-full, got '" + fidelity + "'");
    py::gil_scoped_release unlocked;
    const sp::ExperimentSpec e = sp::load_experiment(experiment, overrides);
    sp::StepOptions options;
    options.fidelity = choice->fidelity;
    options.flow_symmetry = choice->symmetry;
    options.straggler_band = true; // as `run`
    return results::step_json(e, sp::simulate_step(e, options)).dump();
}

std::string collective(const results::CollectiveRequest& request) {
    py::gil_scoped_release unlocked;
    const results::CollectiveSweep sweep(request);
    return results::collective_json(sweep, sweep.rows()).dump();
}

/// The sweep's CSV as (columns, rows), the rows in configuration order.
py::tuple sweep(const std::string& experiment,
                const std::vector<std::pair<std::string, std::vector<std::string>>>& vary,
                const Pairs& fixed, int gpus, const std::string& max_memory,
                const std::string& fidelity, int jobs) {
    explore::SweepRequest request;
    request.experiment = experiment;
    for (const auto& [key, values] : vary)
        request.axes.push_back({key, values});
    request.fixed = fixed;
    request.gpus = gpus;
    request.max_memory = explore::parse_max_memory(max_memory);
    request.fidelity = sweep_fidelity(fidelity);
    if (jobs < 0)
        throw InputError("jobs: expected a positive number of threads, got " +
                         std::to_string(jobs));
    std::vector<std::string> columns;
    std::vector<std::string> rows;
    {
        py::gil_scoped_release unlocked;
        const explore::SweepSetup setup(request);
        columns = setup.columns();
        std::vector<sp::Settings> configs;
        for (std::int64_t i = 0; i < setup.grid().size(); ++i)
            configs.push_back(setup.grid().settings(i));
        const auto outcomes = explore::evaluate_all(setup.evaluator(), configs,
                                                    jobs > 0 ? jobs : explore::default_jobs());
        for (std::size_t i = 0; i < outcomes.size(); ++i)
            rows.push_back(explore::csv_row(static_cast<std::int64_t>(i),
                                            setup.grid().values(static_cast<std::int64_t>(i)),
                                            outcomes[i]));
    }
    py::list out;
    for (const auto& row : rows)
        out.append(typed_row(row, columns));
    return py::make_tuple(columns, out);
}

/// scale's planner (explore/scale_plan.h) as (columns, rows): one row per GPU count, the
/// counts of layouts tried, runnable, simulated and fitting, whether one was found and why not,
/// the best layout's sweep columns, ZeRO stage and global batch (None where none fits), its scaling
/// efficiency and the time to train `tokens` (0: 20 tokens per parameter, as `scale` takes it).
py::tuple scale(const std::string& experiment, const std::vector<std::int64_t>& gpus,
                const Pairs& fixed, const std::string& max_memory, const std::string& fidelity,
                int jobs, double tokens) {
    if (gpus.empty())
        throw InputError("gpus: give at least one GPU count");
    if (jobs < 0)
        throw InputError("jobs: expected a positive number of threads, got " +
                         std::to_string(jobs));
    if (!(std::isfinite(tokens) && tokens >= 0))
        throw InputError("tokens: expected a number of tokens >= 0");
    explore::ScaleRequest request;
    for (std::int64_t n : gpus) {
        if (n < 1 || n > (1 << 24))
            throw InputError("gpus: expected GPU counts from 1 to 16,777,216, got " +
                             std::to_string(n));
        request.gpus.push_back(static_cast<int>(n));
    }
    for (const auto& kv : fixed)
        request.search.fixed_keys.push_back(kv.first);
    request.evaluation.max_memory = explore::parse_max_memory(max_memory);
    request.evaluation.fidelity = sweep_fidelity(fidelity);
    request.jobs = jobs > 0 ? jobs : explore::default_jobs();
    explore::ScalePlan plan;
    {
        py::gil_scoped_release unlocked;
        const sp::ExperimentVariants variants(experiment, fixed);
        const sp::ExperimentSpec base = variants.read({});
        request.tokens =
            tokens > 0
                ? tokens
                : 20 * static_cast<double>(strategies::models::parameter_counts(base.model).total);
        plan = explore::plan_scale(variants, request);
    }
    // The sweep's result columns of the winner, less "invalid_reason" (a winner is valid).
    const std::vector<std::string>& result = explore::result_columns();
    std::vector<std::string> columns{"gpus", "tried", "valid", "fit", "found", "reason"};
    for (std::size_t c = 1; c + 1 < result.size(); ++c)
        columns.push_back(result[c]);
    for (const char* c : {"zero", "global_batch", "efficiency", "train_s"})
        columns.push_back(c);
    py::list rows;
    for (const auto& p : plan.points) {
        const bool found = p.verdict == explore::ScaleVerdict::found;
        py::list row;
        row.append(p.gpus);
        row.append(p.tried);
        row.append(p.valid);
        row.append(p.fit);
        row.append(found);
        row.append(found ? py::object(py::none()) : py::object(py::str(p.reason)));
        // The winner as a sweep row: csv_row(index 0, no varied values) is "0," then the
        // result columns.
        const std::vector<std::string> fields =
            found ? explore::split_csv(explore::csv_row(0, {}, p.outcome))
                  : std::vector<std::string>{};
        for (std::size_t c = 1; c + 1 < result.size(); ++c)
            row.append(found ? typed(result[c], fields[1 + c]) : py::none());
        row.append(found ? py::object(py::int_(p.layout.zero)) : py::none());
        row.append(found ? py::object(py::int_(p.layout.global_batch)) : py::none());
        row.append(found ? py::object(py::float_(p.efficiency)) : py::none());
        row.append(found ? py::object(py::float_(p.train_s)) : py::none());
        rows.append(row);
    }
    return py::make_tuple(columns, rows);
}

/// {"hardware": [...], "models": [...], "experiments": [...]}: the names `clustersim list` shows.
py::dict presets() {
    py::dict out;
    for (const char* folder : {"hardware", "models", "experiments"})
        out[folder] = config::preset_names(config::PresetKind{folder, folder, ""});
    return out;
}

/// clustersim.InputError, the Python type. A translator is a plain function, so the type is
/// kept here; it lives as long as the process (never released: the translator may run until
/// the interpreter exits).
PyObject* input_error_type = nullptr;

/// InputError as clustersim.InputError (a ValueError): the message, and the file, line, column
/// and key as attributes (None where the library did not know them).
void register_input_error(py::module_& m) {
    input_error_type = (new py::exception<InputError>(m, "InputError", PyExc_ValueError))->ptr();
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const InputError& e) {
            // Calling the type makes an instance, which then carries the attributes.
            py::object error = py::handle(input_error_type)(e.what());
            const auto& where = e.where();
            error.attr("file") = where && !where->file.empty() ? py::object(py::str(where->file))
                                                               : py::object(py::none());
            error.attr("line") =
                where && where->line > 0 ? py::object(py::int_(where->line)) : py::none();
            error.attr("column") =
                where && where->column > 0 ? py::object(py::int_(where->column)) : py::none();
            error.attr("key") = where && !where->key.empty() ? py::object(py::str(where->key))
                                                             : py::object(py::none());
            PyErr_SetObject(input_error_type, error.ptr());
        }
    });
}

} // namespace

} // namespace clustersim::python

PYBIND11_MODULE(_core, m) {
    namespace cp = clustersim::python;
    using clustersim::results::CollectiveRequest;
    m.doc() = "clustersim's C++ core; use the clustersim package (its __init__.py)";
    cp::register_input_error(m);
    m.def("run", &cp::run, py::arg("experiment"), py::arg("overrides"), py::arg("fidelity"));
    m.def(
        "collective",
        [](const std::string& hardware, int gpus, const std::string& op,
           const std::optional<std::string>& bytes, const std::string& min_bytes,
           const std::string& max_bytes, int factor, const std::string& algo,
           const std::string& protocol, const std::string& fidelity, const std::string& dtype,
           int root) {
            CollectiveRequest r;
            r.hardware = hardware;
            r.gpus = gpus;
            r.op = op;
            r.bytes = bytes;
            r.min_bytes = min_bytes;
            r.max_bytes = max_bytes;
            r.factor = factor;
            r.algo = algo;
            r.protocol = protocol;
            r.fidelity = fidelity;
            r.dtype = dtype;
            r.root = root;
            return cp::collective(r);
        },
        py::arg("hardware"), py::arg("gpus"), py::arg("op"), py::arg("bytes"), py::arg("min_bytes"),
        py::arg("max_bytes"), py::arg("factor"), py::arg("algo"), py::arg("protocol"),
        py::arg("fidelity"), py::arg("dtype"), py::arg("root"));
    m.def("sweep", &cp::sweep, py::arg("experiment"), py::arg("vary"), py::arg("fixed"),
          py::arg("gpus"), py::arg("max_memory"), py::arg("fidelity"), py::arg("jobs"));
    m.def("scale", &cp::scale, py::arg("experiment"), py::arg("gpus"), py::arg("fixed"),
          py::arg("max_memory"), py::arg("fidelity"), py::arg("jobs"), py::arg("tokens"));
    m.def("parse_int_list", &clustersim::explore::parse_int_list, py::arg("flag"), py::arg("text"));
    m.def("presets", &cp::presets);
    m.def("config_dir", &clustersim::config::config_dir);
}
