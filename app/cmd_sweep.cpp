// clustersim sweep EXPERIMENT.yaml --vary KEY=V1,V2,... : every configuration of the product of
// the axes, simulated on a pool of threads (and across MPI ranks with --mpi), one CSV row per
// configuration in configuration order, and the best ones as a table.
#include "app/cli.h"
#include "app/mpi_sweep.h"
#include "app/output.h"
#include "app/sweep.h"
#include "app/uncertainty.h"
#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "explore/distribute.h"
#include "explore/evaluator.h"
#include "explore/grid.h"
#include "explore/ordered_sink.h"
#include "explore/progress.h"
#include "explore/resume.h"
#include "explore/sweep_row.h"
#include "explore/thread_pool.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

namespace clustersim::app {
namespace {

namespace sp = strategies::parallel;
using explore::Axis;
using explore::RowSummary;
using strategies::parallel::Settings;

struct SweepOptions {
    std::string experiment;
    std::vector<std::string> vary;
    std::vector<std::string> sets;
    int gpus = 0;
    std::string max_memory;
    int jobs = 0;
    std::string out;
    int top = 10;
    bool resume = false;
    std::string fidelity = "analytic";
    bool mpi = false;
    std::int64_t max_configurations = explore::kDefaultMaxConfigurations;
};

/// Counts and the best rows, kept as rows come (a sweep of 10^6 rows need not stay in memory).
class Tally {
public:
    Tally(std::size_t columns, std::size_t k)
        : columns_(columns)
        , k_(k) {}
    void add(const std::string& row) {
        RowSummary s = explore::parse_row(row, columns_);
        ++total_;
        if (!s.valid) {
            ++invalid_;
            return;
        }
        ++(s.oom ? oom_ : fit_);
        if (k_ == 0)
            return;
        best_.push_back(std::move(s));
        // The order is total, so the k best of what has been seen contain the final k best.
        if (best_.size() > 2 * k_ + 64)
            best_ = explore::top_rows(std::move(best_), k_);
    }
    std::vector<RowSummary> best() const { return explore::top_rows(best_, k_); }
    std::int64_t total_ = 0, invalid_ = 0, fit_ = 0, oom_ = 0;

private:
    std::size_t columns_;
    std::size_t k_;
    std::vector<RowSummary> best_;
};

/// `lockstep` stays true while every rank runs the same checks (an InputError then is every
/// rank's, and rank 0 can say it before any rank exits); it turns false when the ranks part.
void run_sweep(const SweepOptions& o, Io io, mpi::Session* session, bool& lockstep) {
    const int rank = session ? session->rank() : 0;
    const int ranks = session ? session->size() : 1;

    // Everything that can be wrong is found before any file is written; every rank finds the
    // same (the checks are deterministic), and only rank 0 prints.
    if (o.vary.empty())
        throw InputError(
            "--vary: give at least one KEY=V1,V2,... (e.g. --vary parallel.tp=1,2,4,8)");
    if (o.jobs < 0)
        throw InputError("--jobs: expected a positive number of threads, got " +
                         std::to_string(o.jobs));
    if (o.top < 0)
        throw InputError("--top: expected a number of rows >= 0, got " + std::to_string(o.top));
    if (o.max_configurations < 1)
        throw InputError(fmt::format("--max-configurations: expected a positive count, got {}",
                                     o.max_configurations));
    if (o.resume && o.out.empty())
        throw InputError("--resume: needs --out FILE.csv (the sweep to continue)");
    refuse_output_over_input(o.out, "--out", {o.experiment});
    std::vector<Axis> axes;
    for (const auto& text : o.vary) {
        Axis a = explore::parse_axis("--vary", text);
        for (const Axis& b : axes) {
            if (b.key == a.key)
                throw InputError("--vary " + a.key +
                                 ": given twice; put all its values in one list");
        }
        axes.push_back(std::move(a));
    }
    {
        // Counted before anything is read or simulated: 10^12 configurations would run
        // silently for ever (and their index list alone is terabytes).
        const explore::Grid counted(axes);
        std::vector<std::string> sizes;
        for (const Axis& a : axes)
            sizes.push_back(fmt::format("{} {}", a.values.size(), a.key));
        explore::check_configuration_count(counted.size(), o.max_configurations,
                                           base::join(sizes, " x "), "--max-configurations");
    }
    Settings fixed;
    for (const auto& s : o.sets)
        fixed.push_back(sp::parse_override(s));
    const std::int64_t max_memory = explore::parse_max_memory(o.max_memory);

    const sp::ExperimentVariants variants(o.experiment, fixed);
    auto varied = [&](const char* key) {
        return std::any_of(axes.begin(), axes.end(), [&](const Axis& a) { return a.key == key; });
    };
    for (const Axis& a : axes) {
        // A key of the hardware file (hardware.framework.align_param_gather, say) is not listed:
        // that schema is the hardware loader's, nested; each value is read below, and a key
        // the loader does not know is refused there with the keys it takes.
        if (!variants.is_key(a.key) && !a.key.starts_with("hardware."))
            throw InputError("--vary " + a.key +
                             ": unknown key; valid keys: " + base::join(variants.keys(), ", ") +
                             ", and hardware.<key of the hardware file>");
        if (o.gpus > 0 && (a.key == "gpus" || a.key == "nodes"))
            throw InputError("--vary " + a.key + ": the GPU count is fixed by --gpus " +
                             std::to_string(o.gpus) + "; give one or the other");
    }
    const bool dp_given = varied("parallel.dp") ||
                          std::any_of(fixed.begin(), fixed.end(),
                                      [](const auto& kv) { return kv.first == "parallel.dp"; });
    explore::EvalOptions eo;
    eo.gpus = o.gpus;
    eo.max_memory = max_memory;
    eo.fidelity = o.fidelity == "flow" ? sp::Fidelity::flow : sp::Fidelity::analytic;
    // dp follows the GPUs whenever the split or the GPU count changes and dp itself does not.
    eo.derive_dp =
        !dp_given && (varied("parallel.tp") || varied("parallel.pp") || varied("parallel.cp") ||
                      varied("gpus") || varied("nodes") || o.gpus > 0);
    const explore::Evaluator evaluator(variants, eo);

    // Values of the wrong type are errors of the command line, not invalid configurations.
    for (const Axis& a : axes) {
        for (const auto& v : a.values) {
            Settings s;
            if (o.gpus > 0)
                s.emplace_back("gpus", std::to_string(o.gpus));
            s.emplace_back(a.key, v);
            try {
                (void)variants.read(s);
            } catch (const InputError& e) {
                throw InputError("--vary " + a.key + "=" + v + ": " +
                                 explore::strip_path(e.what(), o.experiment));
            }
        }
    }

    const explore::Grid grid(axes);
    const std::int64_t configs = grid.size();
    // A sweep in which nothing can run (a GPU count no split uses, say) is a mistake.
    {
        std::string first_reason;
        bool any = false;
        for (std::int64_t i = 0; i < configs && !any; ++i) {
            try {
                (void)evaluator.experiment(grid.settings(i));
                any = true;
            } catch (const InputError& e) {
                if (first_reason.empty())
                    first_reason = explore::strip_path(e.what(), o.experiment);
            }
        }
        if (!any)
            throw InputError(fmt::format(
                "none of the {} configurations can run{}: the first "
                "fails with: {}",
                configs, o.gpus > 0 ? fmt::format(" on {} GPUs", o.gpus) : "", first_reason));
    }

    const auto columns = explore::csv_columns(axes);
    explore::Identity id;
    id.experiment = o.experiment;
    id.experiment_hash = explore::file_hash(o.experiment);
    id.fixed = fixed;
    id.axes = axes;
    id.gpus = o.gpus;
    id.max_memory = max_memory;
    id.fidelity = o.fidelity;
    const std::string header = explore::csv_header(id, columns);

    // Rank 0 reads what a resumed sweep has already written and opens the CSV; it tells the
    // other ranks which configurations are left (or the error, so that all stop together).
    explore::Existing existing;
    std::unique_ptr<explore::LineWriter> writer;
    bool resumed = false;
    std::string plan;
    if (rank == 0) {
        try {
            resumed = o.resume && std::filesystem::exists(o.out);
            // Locked before it is read or truncated: a second sweep on the same --out is
            // refused here, before it can touch the first one's rows.
            if (!o.out.empty())
                writer = std::make_unique<explore::LineWriter>(o.out);
            if (resumed)
                existing = explore::read_existing(o.out, header, configs);
            if (writer)
                writer->start(!resumed, header, existing.keep_bytes);
            plan = explore::encode_plan(existing.done);
        } catch (const InputError& e) {
            plan = explore::encode_plan_error(e.what());
        }
    }
    if (session)
        session->broadcast(plan);
    const explore::Plan decoded = explore::decode_plan(plan);
    if (!decoded.error.empty())
        throw InputError(decoded.error);
    const std::set<std::int64_t>& done = rank == 0 ? existing.done : decoded.done;
    std::vector<std::int64_t> todo;
    for (std::int64_t i = 0; i < configs; ++i) {
        if (!done.count(i))
            todo.push_back(i);
    }
    const std::vector<std::int64_t> mine = explore::rank_share(todo, rank, ranks);
    lockstep = false;
    const int jobs = o.jobs > 0 ? o.jobs : explore::default_jobs();
    auto work = [&](std::int64_t index) {
        return explore::csv_row(index, grid.values(index),
                                evaluator.evaluate(grid.settings(index)));
    };

    if (rank != 0) {
        // A worker rank: simulate its share, ship rows to rank 0 as they are done.
        explore::run_worker(mine, jobs, work, *session);
        return;
    }

    // Rank 0: simulate its share, receive the others', write every row in order.
    Tally tally(columns.size(), static_cast<std::size_t>(o.top));
    for (const auto& row : existing.rows)
        tally.add(row);
    explore::ProgressMeter progress(static_cast<std::int64_t>(todo.size()),
                                    sweep::progress_bar(io.err, "configurations"),
                                    sweep::is_terminal(io.err));
    std::int64_t emitted = 0;
    explore::OrderedSink sink(todo, [&](std::int64_t, const std::string& row) {
        if (writer)
            writer->write_line(row);
        tally.add(row);
        progress.update(++emitted);
    });
    fmt::print(
        io.out, "{:<10}{}: {} configurations ({}){}, {} fidelity, {} thread{}{}\n", "sweep",
        o.experiment, configs,
        [&] {
            std::vector<std::string> sizes;
            for (const Axis& a : axes)
                sizes.push_back(fmt::format("{} {}", a.values.size(), a.key));
            return base::join(sizes, " x ");
        }(),
        o.gpus > 0 ? fmt::format(" on {} GPUs", o.gpus) : "", o.fidelity, jobs,
        jobs == 1 ? "" : "s", ranks > 1 ? fmt::format(" on each of {} MPI ranks", ranks) : "");
    if (eo.derive_dp)
        fmt::print(io.out, "{:<10}derived as gpus / (tp x pp x cp) in every configuration\n", "dp");
    if (resumed)
        fmt::print(io.out, "{:<10}{} rows already in {}, {} to go\n", "resume",
                   existing.done.size(), o.out, todo.size());
    else if (o.resume)
        fmt::print(io.out, "{:<10}no {} yet: starting the sweep\n", "resume", o.out);

    if (ranks == 1) {
        // What runs at once is bounded by the largest configuration's scratch (thread_pool.h),
        // and light configurations (up to 16 MiB of records each) always run side by side.
        explore::run_pool(
            mine, jobs, work,
            [&](std::int64_t index) { return evaluator.scratch(grid.settings(index)); },
            std::int64_t{32} << 20, sink);
    } else {
        try {
            explore::run_root(mine, jobs, work, ranks, *session, sink);
        } catch (const explore::RankFailure& e) {
            fmt::print(io.err, "clustersim: internal error on MPI rank {}: {}\n", e.rank(),
                       e.what());
            session->abort(1);
        }
    }
    progress.finish();
    if (!o.out.empty() && !existing.in_order) {
        // Rows resumed from a file not in configuration order (edited by hand): sort it. The
        // writer (and its lock) lives until the sorted file has replaced it.
        std::ifstream in(o.out, std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        write_file_atomically(o.out, explore::sorted_csv(text, header));
    }
    writer.reset();

    fmt::print(io.out,
               "{:<10}{} valid: {} fit in memory, {} out of memory; {} invalid (each row of the "
               "CSV says why)\n",
               "result", tally.fit_ + tally.oom_, tally.fit_, tally.oom_, tally.invalid_);
    if (!o.out.empty())
        fmt::print(io.out, "{:<10}{}\n", "csv", o.out);
    if (o.top > 0) {
        const auto best = tally.best();
        fmt::print(io.out,
                   "\nbest {} by tokens/s (configurations that fit in memory first, then those "
                   "out of memory)\n",
                   best.size());
        sweep::print_top(io.out, columns, axes, best);
        // How far to trust the times: the hardware file's band for steps (app/uncertainty.h),
        // shown for the best configuration.
        if (!best.empty() && best.front().valid) {
            const auto& f = best.front().fields;
            const std::size_t at = explore::result_column(f.size(), "step_time_s");
            const sp::ExperimentSpec e = evaluator.experiment(grid.settings(best.front().index));
            fmt::print(io.out, "\n{:<12}best: {}\n", "uncertainty",
                       band_text(e.provenance.uncertainty, e.cluster.name, PredictionKind::step,
                                 std::stod(f.at(at))));
        }
    }
}

} // namespace

void register_sweep(CLI::App& app, Io io, int& exit_code) {
    auto o = std::make_shared<SweepOptions>();
    auto* cmd = app.add_subcommand(
        "sweep", "Simulate every combination of experiment keys; CSV of all, table of the best");
    cmd->add_option("experiment", o->experiment, "Experiment file (YAML)")->required();
    cmd->add_option("--vary", o->vary,
                    "KEY=V1,V2,... : values of one key (repeatable; e.g. parallel.tp=1,2,4,8)")
        ->required();
    cmd->add_option("--set", o->sets,
                    "Fix a key in every configuration, e.g. --set parallel.zero=1");
    auto* gpus = cmd->add_option(
        "--gpus", o->gpus,
        "GPUs of every configuration (default: the experiment's); dp = gpus / (tp x "
        "pp)");
    cmd->add_option("--max-memory", o->max_memory,
                    "Memory per GPU for the out-of-memory verdict (default: the GPU's HBM)");
    cmd->add_option("--jobs", o->jobs, "Threads (default: every core)");
    auto* out = cmd->add_option("--out", o->out, "Write every configuration as a CSV row");
    cmd->add_option("--top", o->top, "Print the best K configurations")->capture_default_str();
    cmd->add_flag("--resume", o->resume,
                  "Continue the sweep in --out: skip the configurations already written");
    cmd->add_option("--fidelity", o->fidelity, "analytic (closed forms) or flow (network)")
        ->check(CLI::IsMember({"analytic", "flow"}))
        ->capture_default_str();
    cmd->add_option("--max-configurations", o->max_configurations,
                    "Refuse a grid of more configurations than this")
        ->capture_default_str();
    cmd->add_flag("--mpi", o->mpi,
                  "Split the configurations among MPI ranks (run under mpirun); rank 0 writes");
    cmd->callback([o, io, out, gpus, &exit_code] {
        std::unique_ptr<mpi::Session> session;
        if (o->mpi)
            session = std::make_unique<mpi::Session>();
        const int rank = session ? session->rank() : 0;
        bool lockstep = true;
        try {
            // 0 is the default ("the experiment's"), but given, it is a mistake.
            if (gpus->count() > 0 && o->gpus < 1)
                throw InputError(
                    fmt::format("--gpus: expected a GPU count of at least 1, got {}", o->gpus));
            // `--out ''` (a shell variable that was not set) is a mistake, not "no CSV".
            if (out->count() > 0 && o->out.empty())
                throw InputError("--out: expected a file name, got ''");
            run_sweep(*o, io, session.get(), lockstep);
        } catch (const InputError& e) {
            if (session && lockstep) {
                // Every rank has this error. Rank 0 says it before any rank exits: mpirun
                // stops the job when the first rank exits with an error, and a rank 0 not yet
                // done printing was killed silently (2 runs in 5).
                if (rank == 0) {
                    fmt::print(io.err, "clustersim: error: {}\n", e.what());
                    io.err.flush();
                }
                session->barrier();
                exit_code = kUsage;
                return;
            }
            if (rank == 0)
                throw;
            exit_code = kUsage; // every rank found the same error; rank 0 says it
        }
    });
}

} // namespace clustersim::app
