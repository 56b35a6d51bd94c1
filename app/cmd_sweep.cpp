// clustersim sweep EXPERIMENT.yaml --vary KEY=V1,V2,... : every configuration of the product of
// the axes, simulated on a pool of threads (and across MPI ranks with --mpi), one CSV row per
// configuration in configuration order, and the best ones as a table.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "app/mpi_sweep.h"
#include "app/output.h"
#include "app/sweep.h"
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
#include "explore/sweep_setup.h"
#include "explore/thread_pool.h"
#include "results/uncertainty.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

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

struct SweepOptions : ExperimentOptions {
    std::string experiment;
    std::vector<std::string> vary;
    int gpus = 0;
    std::string max_memory;
    std::string out;
    int top = 10;
    bool resume = false;
    bool mpi = false;
    std::int64_t max_configurations = explore::kDefaultMaxConfigurations;
};

/// The type of each column of the sweep's CSV, for readers that want them stated (pandas
/// infers the same from the values).
std::string column_type(const std::string& name, std::size_t index, std::size_t axes) {
    if (index == 0)
        return "int";
    if (index <= axes)
        return "string"; // the values as given to --vary
    return std::string(
        explore::to_string(explore::result_column_type(name).value_or(explore::ColumnType::text)));
}

/// F.csv.json: what the CSV's rows are (the sweep's identity, for --resume, and its columns).
std::string sweep_sidecar(const std::string& identity, const explore::Identity& id,
                          const std::vector<std::string>& columns) {
    nlohmann::ordered_json j;
    j["tool"] = "clustersim sweep";
    std::vector<std::string> lines;
    std::istringstream in(identity);
    for (std::string l; std::getline(in, l);)
        lines.push_back(l);
    j["sweep_id"] = lines.back().substr(lines.back().find(": ") + 2);
    j["experiment"] = id.experiment;
    j["identity"] = lines;
    nlohmann::ordered_json cols = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < columns.size(); ++i)
        cols.push_back(
            {{"name", columns[i]}, {"type", column_type(columns[i], i, id.axes.size())}});
    j["columns"] = cols;
    j["empty_cells"] = "a row with invalid_reason set did not run: its results are empty; "
                       "oom_stage and oom_excess_bytes are empty unless oom is true";
    // docs/output.md's contract: an empty cell is no value, never a stand-in number, so a plain
    // pandas.read_csv types a column with empty cells as pandas types missing values.
    j["pandas"] = "pandas.read_csv(F) reads a column with a value in every row as its type "
                  "(int64, float64, bool, object); a column with empty cells as pandas reads "
                  "missing values: int as float64 (NaN where empty, whole numbers elsewhere), "
                  "bool as object (True, False, NaN). For the stated types with <NA>, pass "
                  "dtype= with int: Int64, float: float64, bool: boolean, string: string";
    return j.dump(2) + "\n";
}

/// The identity stored in a sweep's F.csv.json, as sweep_identity writes it.
std::string read_sidecar_identity(const std::string& sidecar) {
    std::ifstream in(sidecar, std::ios::binary);
    if (!in)
        throw InputError(sidecar + ": --resume needs the metadata a sweep writes beside its CSV, "
                                   "and it is missing; write to another --out, or delete the CSV "
                                   "to start over");
    try {
        const auto j = nlohmann::json::parse(in);
        std::string text;
        for (const auto& l : j.at("identity"))
            text += l.get<std::string>() + "\n";
        return text;
    } catch (const nlohmann::json::exception& e) {
        throw InputError(sidecar + ": --resume: not the metadata of a sweep (" + e.what() + ")");
    }
}

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

/// The checks of the options that need no file: they fail before any file is written.
void check_sweep_options(const SweepOptions& o) {
    if (o.top < 0)
        throw InputError("--top: expected a number of rows >= 0, got " + std::to_string(o.top));
    if (o.max_configurations < 1)
        throw InputError(fmt::format("--max-configurations: expected a positive count, got {}",
                                     o.max_configurations));
    if (o.resume && o.out.empty())
        throw InputError("--resume: needs --out FILE.csv (the sweep to continue)");
    refuse_output_over_input(o.out, "--out", {o.experiment});
    refuse_output_over_input(o.out.empty() ? o.out : o.out + ".json", "--out", {o.experiment});
}

explore::SweepRequest sweep_request(const SweepOptions& o) {
    explore::SweepRequest request;
    request.experiment = o.experiment;
    for (const auto& text : o.vary)
        request.axes.push_back(explore::parse_axis("--vary", text));
    request.max_configurations = o.max_configurations;
    request.fixed = o.overrides();
    request.gpus = o.gpus;
    request.max_memory = explore::parse_max_memory(o.max_memory);
    const explore::EvalOptions eo = o.eval_options();
    request.fidelity = eo.fidelity;
    request.flow_symmetry = eo.flow_symmetry;
    return request;
}

/// What rank 0 finds before the sweep runs: the rows a resumed sweep has already written, the
/// CSV opened (and locked), and the plan it tells the other ranks (or the error, so that all
/// stop together).
struct RootStart {
    explore::Existing existing;
    std::unique_ptr<explore::LineWriter> writer;
    bool resumed = false;
    std::string plan;
};

RootStart start_root(const SweepOptions& o, const std::string& sidecar, const std::string& identity,
                     const explore::Identity& id, const std::vector<std::string>& columns,
                     const std::string& header, std::int64_t configs) {
    RootStart r;
    explore::Existing& existing = r.existing;
    std::unique_ptr<explore::LineWriter>& writer = r.writer;
    bool& resumed = r.resumed;
    std::string& plan = r.plan;
    try {
        resumed = o.resume && std::filesystem::exists(o.out);
        // Locked before it is read or truncated: a second sweep on the same --out is
        // refused here, before it can touch the first one's rows.
        if (!o.out.empty())
            writer = std::make_unique<explore::LineWriter>(o.out);
        if (resumed) {
            explore::check_identity(sidecar, identity, read_sidecar_identity(sidecar));
            existing = explore::read_existing(o.out, header, configs);
        }
        if (writer && !resumed)
            write_file_atomically(sidecar, sweep_sidecar(identity, id, columns));
        if (writer)
            writer->start(!resumed, header, existing.keep_bytes);
        plan = explore::encode_plan(existing.done);
    } catch (const InputError& e) {
        plan = explore::encode_plan_error(e.what());
    }
    return r;
}

/// The sweep's first lines: what runs, where, and what a resume found.
void print_sweep_start(Io io, const SweepOptions& o, const explore::SweepSetup& setup,
                       const RootStart& root, std::size_t todo, int jobs, int ranks) {
    const auto& axes = setup.grid().axes();
    const std::int64_t configs = setup.grid().size();
    const bool resumed = root.resumed;
    const explore::Existing& existing = root.existing;
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
    if (setup.derives_dp())
        fmt::print(io.out, "{:<10}derived as gpus / (tp x pp x cp) in every configuration\n", "dp");
    if (resumed)
        fmt::print(io.out, "{:<10}{} rows already in {}, {} to go\n", "resume",
                   existing.done.size(), o.out, todo);
    else if (o.resume)
        fmt::print(io.out, "{:<10}no {} yet: starting the sweep\n", "resume", o.out);
}

/// The counts, the CSV's name, the best rows and how far to trust their times.
void print_sweep_result(Io io, const SweepOptions& o, const explore::SweepSetup& setup,
                        const Tally& tally, const std::vector<std::string>& columns) {
    const auto& axes = setup.grid().axes();
    const explore::Evaluator& evaluator = setup.evaluator();
    const explore::Grid& grid = setup.grid();
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
        // How far to trust the times: the hardware file's band for steps (results/uncertainty.h),
        // shown for the best configuration.
        if (!best.empty() && best.front().valid) {
            const auto& f = best.front().fields;
            const std::size_t at = explore::result_column(f.size(), "step_time_s");
            const sp::ExperimentSpec e = evaluator.experiment(grid.settings(best.front().index));
            fmt::print(io.out, "\n{:<12}best: {}\n", "uncertainty",
                       results::band_text(e.provenance.uncertainty, e.cluster.name,
                                          results::PredictionKind::step, std::stod(f.at(at))));
        }
    }
}

/// `lockstep` stays true while every rank runs the same checks (an InputError then is every
/// rank's, and rank 0 can say it before any rank exits); it turns false when the ranks part.
void run_sweep(const SweepOptions& o, Io io, mpi::Session* session, bool& lockstep) {
    const int rank = session ? session->rank() : 0;
    const int ranks = session ? session->size() : 1;

    // Everything that can be wrong is found before any file is written; every rank finds the
    // same (the checks are deterministic), and only rank 0 prints.
    const int jobs = o.threads();
    check_sweep_options(o);
    const explore::SweepRequest request = sweep_request(o);
    // The axes, their values and the configurations checked (explore/sweep_setup.h).
    const explore::SweepSetup setup(request);
    const auto& axes = setup.grid().axes();
    const explore::Evaluator& evaluator = setup.evaluator();
    const explore::Grid& grid = setup.grid();
    const std::int64_t configs = grid.size();

    const auto columns = explore::csv_columns(axes);
    explore::Identity id;
    id.experiment = o.experiment;
    id.experiment_hash = explore::file_hash(o.experiment);
    id.fixed = request.fixed;
    id.axes = axes;
    id.gpus = o.gpus;
    id.max_memory = request.max_memory;
    id.fidelity = o.fidelity;
    const std::string header = explore::csv_header(columns);
    const std::string identity = explore::sweep_identity(id);
    const std::string sidecar = o.out.empty() ? std::string() : o.out + ".json";

    // Rank 0 reads what a resumed sweep has already written and opens the CSV; it tells the
    // other ranks which configurations are left (or the error, so that all stop together).
    RootStart root;
    if (rank == 0)
        root = start_root(o, sidecar, identity, id, columns, header, configs);
    if (session)
        session->broadcast(root.plan);
    const explore::Plan decoded = explore::decode_plan(root.plan);
    if (!decoded.error.empty())
        throw InputError(decoded.error);
    const explore::Existing& existing = root.existing;
    const std::set<std::int64_t>& done = rank == 0 ? existing.done : decoded.done;
    std::vector<std::int64_t> todo;
    for (std::int64_t i = 0; i < configs; ++i) {
        if (!done.count(i))
            todo.push_back(i);
    }
    const std::vector<std::int64_t> mine = explore::rank_share(todo, rank, ranks);
    lockstep = false;
    auto work = [&](std::int64_t index) { return setup.row(index); };

    if (rank != 0) {
        // A worker rank: simulate its share, ship rows to rank 0 as they are done.
        explore::run_worker(mine, jobs, work, *session);
        return;
    }

    // Rank 0: simulate its share, receive the others', write every row in order.
    std::unique_ptr<explore::LineWriter>& writer = root.writer;
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
    print_sweep_start(io, o, setup, root, todo.size(), jobs, ranks);
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

    print_sweep_result(io, o, setup, tally, columns);
}

} // namespace

void register_sweep(CLI::App& app, Io io, int& exit_code) {
    auto o = std::make_shared<SweepOptions>();
    auto* cmd = app.add_subcommand(
        "sweep", "Simulate every combination of experiment keys; CSV of all, table of the best");
    cmd->add_option("experiment", o->experiment, "Experiment file (YAML)")->required();
    cmd->add_option("--vary", o->vary,
                    std::string("KEY=V1,V2,... : values of one key (repeatable; e.g. "
                                "parallel.tp=1,2,...,8); ") +
                        explore::kValueListRule)
        ->required();
    o->add_to(*cmd, "Fix a key in every configuration, e.g. --set parallel.zero=1");
    auto* gpus = cmd->add_option(
        "--gpus", o->gpus,
        "GPUs of every configuration (default: the experiment's); dp = gpus / (tp x "
        "pp)");
    cmd->add_option("--max-memory", o->max_memory,
                    "Memory per GPU for the out-of-memory verdict (default: the GPU's HBM)");
    auto* out =
        cmd->add_option("--out", o->out,
                        "Write every configuration as a CSV row (a plain pandas.read_csv reads "
                        "it; what the rows are in F.csv.json beside it)");
    cmd->add_option("--top", o->top, "Print the best K configurations")->capture_default_str();
    cmd->add_flag("--resume", o->resume,
                  "Continue the sweep in --out: skip the configurations already written");
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
