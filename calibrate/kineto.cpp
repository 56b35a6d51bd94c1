#include "calibrate/kineto.h"

#include "base/error.h"
#include "calibrate/import_util.h"
#include "calibrate/kineto_events.h"
#include "calibrate/kineto_shapes.h"
#include "hardware/compute_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

namespace clustersim::calibrate {

// ---------------------------------------------------------------------------------------------
// gzip
// ---------------------------------------------------------------------------------------------

bool is_gzip(std::string_view data) {
    return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
           static_cast<unsigned char>(data[1]) == 0x8b;
}

bool looks_like_trace(std::string_view text) {
    if (is_gzip(text))
        return true;
    const std::string_view head = text.substr(0, std::min<std::size_t>(text.size(), 1 << 16));
    const auto first = head.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || head[first] != '{')
        return false;
    return head.find("\"traceEvents\"") != std::string_view::npos ||
           head.find("\"schemaVersion\"") != std::string_view::npos;
}

std::string gunzip(std::string_view data, const std::string& name, std::uint64_t max_bytes,
                   std::vector<std::string>* warnings) {
    z_stream z{};
    // 16 + MAX_WBITS: a gzip header and trailer (zlib manual, inflateInit2).
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        throw InputError(name + ": cannot start decompressing (zlib)");
    std::string out;
    std::size_t in_pos = 0;
    char buffer[1 << 16];
    int rc = Z_OK;
    while (true) {
        if (z.avail_in == 0 && in_pos < data.size()) {
            const std::size_t n = std::min<std::size_t>(data.size() - in_pos, 1u << 30);
            z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_pos));
            z.avail_in = static_cast<uInt>(n);
            in_pos += n;
        }
        z.next_out = reinterpret_cast<Bytef*>(buffer);
        z.avail_out = sizeof buffer;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
            inflateEnd(&z);
            throw InputError(fmt::format("{}: not a valid gzip file ({}); compress the trace with "
                                         "gzip, or give the .json itself",
                                         name, z.msg != nullptr ? z.msg : "corrupt data"));
        }
        const std::size_t produced = sizeof buffer - z.avail_out;
        if (out.size() + produced > max_bytes) {
            inflateEnd(&z);
            throw InputError(fmt::format("{}: decompresses to more than {}; trace fewer steps "
                                         "(torch.profiler.schedule(active=...))",
                                         name, config::describe_limit(max_bytes)));
        }
        out.append(buffer, produced);
        if (rc == Z_STREAM_END) {
            const std::size_t rest = z.avail_in + (data.size() - in_pos);
            if (rest > 0 && warnings != nullptr)
                warnings->push_back(fmt::format("{}: {} bytes after the end of the gzip data were "
                                                "ignored (a second file appended?)",
                                                name, rest));
            break;
        }
        if (produced == 0 && z.avail_in == 0 && in_pos >= data.size()) {
            inflateEnd(&z);
            throw InputError(name + ": the gzip data is truncated (the file was cut short); copy "
                                    "the whole file again");
        }
    }
    inflateEnd(&z);
    return out;
}

std::string_view phase_name(int phase) {
    switch (phase) {
    case 1:
        return "forward";
    case 2:
        return "backward";
    case 3:
        return "optimizer";
    default:
        return "";
    }
}

namespace {

using namespace kineto_detail;

// ---------------------------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------------------------

/// "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" ->
/// "at::native::vectorized_elementwise_kernel": no parameters, no template arguments.
std::string short_kernel_name(std::string_view name) {
    if (starts_with(name, "void "))
        name.remove_prefix(5);
    std::string text(name);
    for (std::size_t at = text.find("(anonymous namespace)"); at != std::string::npos;
         at = text.find("(anonymous namespace)"))
        text.replace(at, 21, "{anonymous}");
    name = text;
    std::string out;
    int angle = 0;
    for (char c : name) {
        if (c == '<')
            ++angle;
        else if (c == '>')
            angle = std::max(0, angle - 1);
        else if (c == '(' && angle == 0)
            break;
        else if (angle == 0)
            out += c;
    }
    if (out.size() > 120)
        out.resize(120);
    return out;
}

std::optional<CollectiveOp> collective_from(std::string_view text) {
    std::string s;
    for (char c : lower(text))
        if (c != '_' && c != ' ')
            s += c;
    using CollectiveOp = strategies::collectives::CollectiveOp;
    if (contains(s, "allreduce"))
        return CollectiveOp::all_reduce;
    if (contains(s, "allgather"))
        return CollectiveOp::all_gather;
    if (contains(s, "reducescatter"))
        return CollectiveOp::reduce_scatter;
    if (contains(s, "alltoall"))
        return CollectiveOp::all_to_all;
    if (contains(s, "broadcast"))
        return CollectiveOp::broadcast;
    if (contains(s, "sendrecv") || contains(s, "send") || contains(s, "recv"))
        return CollectiveOp::send_recv;
    if (contains(s, "reduce"))
        return CollectiveOp::reduce;
    if (contains(s, "gather"))
        return CollectiveOp::gather;
    if (contains(s, "scatter"))
        return CollectiveOp::scatter;
    return std::nullopt;
}

/// The layer number a range's name ends in: "layer3", "layers.3", "h.3", "block_3",
/// "nn.Module: Block_3"; nullopt when none.
std::optional<int> layer_of(std::string_view name) {
    const std::string l = lower(name);
    std::size_t end = l.size();
    std::size_t begin = end;
    while (begin > 0 && l[begin - 1] >= '0' && l[begin - 1] <= '9')
        --begin;
    if (begin == end || end - begin > 6)
        return std::nullopt;
    std::size_t p = begin;
    if (p > 0 && (l[p - 1] == '.' || l[p - 1] == '_' || l[p - 1] == ' ' || l[p - 1] == '#' ||
                  l[p - 1] == '-'))
        --p;
    for (std::string_view word : {"layers", "layer", "blocks", "block", "h"}) {
        if (p >= word.size() && l.compare(p - word.size(), word.size(), word) == 0) {
            const std::size_t w = p - word.size();
            if (w == 0 || !(l[w - 1] >= 'a' && l[w - 1] <= 'z'))
                return std::stoi(l.substr(begin));
        }
    }
    return std::nullopt;
}

struct Analysis {
    const Parsed& p;
    const std::string& file;
    std::vector<int> parent; // per event: the enclosing CPU range, -1 none
    std::unordered_map<std::int64_t, int> runtime_by_correlation;
    std::unordered_map<std::int64_t, int> op_by_external;
    std::unordered_map<std::int64_t, int> layer_by_seq;
    std::vector<int> name_layer; // per name id: -2 not computed, -1 none
    std::vector<int> step_event; // per event: its ProfilerStep index, -1 none
    /// False when no op has recorded shapes (recorded without record_shapes=True): kernels are
    /// then classed by the names of their ops alone.
    bool shapes = true;

    const std::string& name(const Event& e) const {
        static const std::string none;
        return e.name >= 0 ? p.names[static_cast<std::size_t>(e.name)] : none;
    }
    int layer_name(const Event& e) {
        if (e.name < 0)
            return -1;
        int& l = name_layer[static_cast<std::size_t>(e.name)];
        if (l == -2)
            l = layer_of(name(e)).value_or(-1);
        return l;
    }
};

bool is_range(Cat c) {
    return c == Cat::cpu_op || c == Cat::user_annotation || c == Cat::python_function;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Reading, phase by phase
// ---------------------------------------------------------------------------------------------

namespace {

const std::string kHowToRecord =
    "record with torch.profiler.profile(activities=[ProfilerActivity.CPU, "
    "ProfilerActivity.CUDA], record_shapes=True, schedule=...) and prof.step() per "
    "iteration, then prof.export_chrome_trace(\"trace.json\") "
    "(scripts/pytorch/gpt_trace_steps.py does it)";

/// The events of `text`, refused unless it is a well-formed PyTorch profiler trace.
Parsed parse_trace(std::string_view text, const std::string& name) {
    Parsed p;
    std::string error;
    if (!parse_events(text, p, error)) {
        const bool cut = error.find("unexpected end of input") != std::string::npos;
        throw InputError(fmt::format("{}: {}{}", name, error,
                                     cut ? ": the trace is truncated (the profiler or the copy "
                                           "did not finish); export it again"
                                         : ""));
    }
    if (p.clustersim)
        throw InputError(name +
                         ": is a trace clustersim wrote (run --trace), not a PyTorch "
                         "profiler trace; " +
                         kHowToRecord);
    if (!p.has_trace_events)
        throw InputError(name + ": not a Chrome trace: no \"traceEvents\" list; " + kHowToRecord);
    if (!p.has_schema)
        throw InputError(name + ": not a PyTorch profiler (Kineto) trace: no \"schemaVersion\"; " +
                         kHowToRecord);
    return p;
}

/// Times from the earliest event: Kineto before 2.1 wrote microseconds since the epoch, which
/// as picoseconds would not fit sim::Time.
void rebase_times(Parsed& p, const std::string& name) {
    std::int64_t base = std::numeric_limits<std::int64_t>::max();
    for (const Event& e : p.events)
        base = std::min(base, e.ts);
    for (Event& e : p.events) {
        e.ts -= base;
        if (e.ts > std::numeric_limits<std::int64_t>::max() / 2000 ||
            e.dur > std::numeric_limits<std::int64_t>::max() / 2000)
            throw InputError(fmt::format("{}: traceEvents[{}]: time out of range (more than "
                                         "50 days after the first event)",
                                         name, e.index));
    }
}

/// Events by time; for equal starts the longer (enclosing) first.
std::vector<int> time_order(const Parsed& p) {
    std::vector<int> order(p.events.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const Event& x = p.events[static_cast<std::size_t>(a)];
        const Event& y = p.events[static_cast<std::size_t>(b)];
        if (x.ts != y.ts)
            return x.ts < y.ts;
        return x.dur > y.dur;
    });
    return order;
}

/// The CPU ranges' nesting per thread (a stack of open ranges), the launch calls by
/// correlation and the ops by external id; refused when the trace lacks what the import needs
/// (GPU kernels, CPU ops, input shapes).
void index_events(Analysis& a, const std::vector<int>& order, std::vector<std::string>& warnings) {
    const Parsed& p = a.p;
    a.parent.assign(p.events.size(), -1);
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<int>> stacks;
    for (int i : order) {
        const Event& e = p.events[static_cast<std::size_t>(i)];
        if (!is_range(e.cat) && e.cat != Cat::runtime)
            continue;
        auto& st = stacks[{e.pid, e.tid}];
        while (!st.empty()) {
            const Event& top = p.events[static_cast<std::size_t>(st.back())];
            if (top.ts + top.dur > e.ts || (top.ts == e.ts && top.dur >= e.dur))
                break;
            st.pop_back();
        }
        a.parent[static_cast<std::size_t>(i)] = st.empty() ? -1 : st.back();
        if (is_range(e.cat))
            st.push_back(i);
    }
    std::size_t cpu_ops = 0, with_shapes = 0, kernels = 0;
    for (std::size_t i = 0; i < p.events.size(); ++i) {
        const Event& e = p.events[i];
        if (e.cat == Cat::runtime && e.correlation >= 0)
            a.runtime_by_correlation.emplace(e.correlation, static_cast<int>(i));
        if (e.cat == Cat::cpu_op) {
            ++cpu_ops;
            if (e.dims >= 0)
                ++with_shapes;
            if (e.external_id >= 0)
                a.op_by_external.emplace(e.external_id, static_cast<int>(i));
        }
        if (e.cat == Cat::kernel || e.cat == Cat::memcpy || e.cat == Cat::memset)
            ++kernels;
    }
    if (kernels == 0 && p.overflowing_times > 0)
        throw InputError(fmt::format(
            "{}: {} events were skipped because their ts or dur is too large (at most {} "
            "microseconds, 16 digits; a 17-digit timestamp does not fit in 63 bits of "
            "nanoseconds), which leaves no GPU kernel; write times in microseconds since the "
            "trace's start, as torch.profiler does",
            a.file, p.overflowing_times, std::numeric_limits<std::int64_t>::max() / 1000 - 1000));
    if (kernels == 0)
        throw InputError(a.file +
                         ": the trace has no GPU kernels (recorded without "
                         "ProfilerActivity.CUDA, or on the CPU only); " +
                         kHowToRecord);
    if (cpu_ops == 0)
        throw InputError(a.file +
                         ": the trace has no CPU ops (recorded without "
                         "ProfilerActivity.CPU), so its kernels have no shapes; " +
                         kHowToRecord);
    // Without record_shapes=True (most production traces) the kernels are still classed, by
    // the names of their ops and kernels, and the step, its kernels' times and its idle gaps
    // are what the trace measured; only the per-shape points (GEMM and attention FLOPs,
    // elementwise bytes) need shapes.
    a.shapes = with_shapes > 0;
    if (!a.shapes)
        warnings.push_back(a.file +
                           ": no input shapes (recorded without record_shapes=True): kernels "
                           "classed by the names of their ops and kernels, without the "
                           "per-shape points (GEMM and attention FLOPs, bytes moved)");
}

/// The GPU the kernels ran on (one model per file), from the trace or --device.
Environment trace_environment(const Parsed& p, const std::string& name,
                              const ImportOptions& options) {
    Environment env = detail::initial_environment(options);
    std::set<std::int64_t> used;
    for (const Event& e : p.events)
        if (e.cat == Cat::kernel)
            used.insert(e.device >= 0 ? e.device : e.pid);
    std::set<std::string> described;
    for (auto d : used) {
        auto it = p.devices.find(d);
        if (it != p.devices.end() && !it->second.empty())
            described.insert(it->second);
    }
    if (described.size() > 1)
        throw InputError(fmt::format("{}: kernels ran on different GPU models ({}); one "
                                     "measurement file describes one GPU model",
                                     name, fmt::join(described, ", ")));
    if (described.empty()) {
        if (options.device.empty())
            throw InputError(name + ": the trace does not say which GPU it ran on (no "
                                    "\"deviceProperties\" for the kernels' device); record "
                                    "with a PyTorch that writes them (1.13 or later), or "
                                    "pass --device NAME (as nvidia-smi names it)");
    } else {
        const std::string& d = *described.begin();
        if (!options.device.empty() && options.device != d)
            throw InputError(fmt::format("{}: the trace says device '{}' but --device says "
                                         "'{}'",
                                         name, d, options.device));
        env.device = d;
    }
    env.device_count = p.world_size > 0 ? static_cast<int>(p.world_size) : 1;
    if (p.cuda_runtime > 0)
        env.cuda_version =
            fmt::format("runtime {}.{}", p.cuda_runtime / 1000, (p.cuda_runtime % 1000) / 10);
    env.tool = "torch.profiler (Kineto), via clustersim calibrate import";
    return env;
}

/// The profiler steps: the ProfilerStep# ranges, in time order.
std::vector<TracedStep> profiler_steps(const Analysis& a, const std::vector<int>& order) {
    std::vector<TracedStep> steps;
    for (int i : order) {
        const Event& e = a.p.events[static_cast<std::size_t>(i)];
        if (e.cat == Cat::user_annotation && starts_with(a.name(e), "ProfilerStep#"))
            steps.push_back(
                TracedStep{a.name(e), sim::Time::ns(e.ts), sim::Time::ns(e.ts + e.dur)});
    }
    return steps;
}

/// The index of the step around CPU time `t` (ns), -1 none.
int step_at(const std::vector<TracedStep>& steps, std::int64_t t) {
    auto it =
        std::upper_bound(steps.begin(), steps.end(), t, [](std::int64_t x, const TracedStep& s) {
            return x < s.start.picoseconds() / 1000;
        });
    if (it == steps.begin())
        return -1;
    --it;
    return t < it->end.picoseconds() / 1000 ? static_cast<int>(it - steps.begin()) : -1;
}

/// Calls `visit` on the ranges around event `i`, innermost first, while it returns true.
template <class Visit>
void ancestors(const Analysis& a, int i, Visit&& visit) {
    for (int j = a.parent[static_cast<std::size_t>(i)]; j >= 0;
         j = a.parent[static_cast<std::size_t>(j)])
        if (!visit(j))
            return;
}

/// Layers of forward ops by sequence number (for the backward, which names none).
void index_layers_by_seq(Analysis& a) {
    const Parsed& p = a.p;
    for (std::size_t i = 0; i < p.events.size(); ++i) {
        const Event& e = p.events[i];
        if (e.cat != Cat::cpu_op || e.seq < 0 || contains(a.name(e), "Backward"))
            continue;
        int layer = a.layer_name(e);
        if (layer < 0)
            ancestors(a, static_cast<int>(i), [&](int j) {
                layer = a.layer_name(p.events[static_cast<std::size_t>(j)]);
                return layer < 0;
            });
        if (layer >= 0)
            a.layer_by_seq.emplace(e.seq, layer);
    }
}

/// Where a kernel was launched from: the chain of CPU ranges around its launch call (innermost
/// first), the op with shapes, the attention op, its phase and layer.
struct KernelOrigin {
    int launch = -1;
    std::vector<int> chain;
    std::int64_t cpu_time = 0;
    int op = -1;       ///< the innermost ATen op with recorded inputs
    int named_op = -1; ///< without shapes: the innermost ATen op (its name gives the class)
    int sdpa = -1;     ///< the attention op with the [B, H, S, D] shapes
    int phase = 0;
    int layer = -1;
};

KernelOrigin kernel_origin(Analysis& a, const Event& e) {
    const Parsed& p = a.p;
    KernelOrigin o;
    if (e.correlation >= 0) {
        auto it = a.runtime_by_correlation.find(e.correlation);
        if (it != a.runtime_by_correlation.end())
            o.launch = it->second;
    }
    if (o.launch >= 0) {
        ancestors(a, o.launch, [&](int j) {
            o.chain.push_back(j);
            return true;
        });
    } else if (e.external_id >= 0) {
        auto it = a.op_by_external.find(e.external_id);
        if (it != a.op_by_external.end()) {
            o.chain.push_back(it->second);
            ancestors(a, it->second, [&](int j) {
                o.chain.push_back(j);
                return true;
            });
        }
    }
    o.cpu_time = o.launch >= 0
                     ? p.events[static_cast<std::size_t>(o.launch)].ts
                     : (o.chain.empty() ? e.ts : p.events[static_cast<std::size_t>(o.chain[0])].ts);
    for (int j : o.chain) {
        const Event& c = p.events[static_cast<std::size_t>(j)];
        if (c.cat == Cat::cpu_op && c.dims >= 0) {
            o.op = j;
            break;
        }
        if (!a.shapes && o.named_op < 0 && c.cat == Cat::cpu_op)
            o.named_op = j;
    }
    // SDPA's own op has the [B, H, S, D] shapes; the flash / efficient kernels' ops below it
    // ("aten::_flash_attention_forward") have others.
    int attention_op = -1, bwd_seq = -1;
    o.phase = o.chain.empty() ? 0 : 1;
    for (int j : o.chain) {
        const Event& c = p.events[static_cast<std::size_t>(j)];
        const std::string& n = a.name(c);
        // Without shapes the ops are known by name alone (dims < 0 in every op).
        const bool usable = c.dims >= 0 || !a.shapes;
        if (o.sdpa < 0 && c.cat == Cat::cpu_op && usable && contains(n, "scaled_dot_product"))
            o.sdpa = j;
        if (attention_op < 0 && c.cat == Cat::cpu_op && usable &&
            (contains(n, "flash_attention") || contains(n, "efficient_attention")))
            attention_op = j;
        if (contains(n, "Backward") || starts_with(n, "autograd::engine")) {
            o.phase = 2;
            if (bwd_seq < 0 && c.seq >= 0)
                bwd_seq = c.seq;
        }
        if (o.phase != 2 && (starts_with(n, "Optimizer.") || contains(lower(n), "optimizer")))
            o.phase = 3;
        if (o.layer < 0 && c.cat != Cat::runtime)
            o.layer = a.layer_name(c);
    }
    if (o.sdpa < 0)
        o.sdpa = attention_op;
    if (o.layer < 0 && bwd_seq >= 0) {
        auto it = a.layer_by_seq.find(bwd_seq);
        if (it != a.layer_by_seq.end())
            o.layer = it->second;
    }
    return o;
}

/// An NCCL kernel's collective, group and size: the args Kineto copies onto the kernel, else
/// those of record_param_comms.
void read_collective(const Analysis& a, const Event& e, const KernelOrigin& o,
                     const std::string& kname, KernelMeasurement& k) {
    const Parsed& p = a.p;
    const Event* src = &e;
    if (src->collective < 0)
        for (int j : o.chain)
            if (p.events[static_cast<std::size_t>(j)].collective >= 0) {
                src = &p.events[static_cast<std::size_t>(j)];
                break;
            }
    std::optional<CollectiveOp> cop;
    if (src->collective >= 0)
        cop = collective_from(p.names[static_cast<std::size_t>(src->collective)]);
    if (!cop)
        cop = collective_from(
            kname.substr(kname.find('_') == std::string::npos ? 0 : kname.find('_')));
    const std::int64_t esize =
        src->nccl_dtype >= 0 ? scalar_type_bytes(p.names[static_cast<std::size_t>(src->nccl_dtype)])
                             : 0;
    if (cop && src->group_size > 0 && esize > 0 && src->in_nelems >= 0) {
        k.collective = std::string(strategies::collectives::to_string(*cop));
        k.gpus = static_cast<int>(std::min<std::int64_t>(src->group_size, 1 << 20));
        // nccl-tests' size: the whole buffer for gathers (the output), else the input.
        const std::int64_t n = *cop == CollectiveOp::all_gather || *cop == CollectiveOp::gather
                                   ? src->out_nelems
                                   : src->in_nelems;
        if (n > 0 && n < (std::int64_t{1} << 50) / esize)
            k.bytes = n * esize;
    }
    if (o.op >= 0)
        k.op = a.name(p.events[static_cast<std::size_t>(o.op)]);
    else if (!o.chain.empty())
        k.op = a.name(p.events[static_cast<std::size_t>(o.chain[0])]);
}

/// The kernel's class, and the op whose shapes describe it (null: none).
const Event* classify_kernel(const Analysis& a, const Event& e, const KernelOrigin& o,
                             const std::string& kname, KernelMeasurement& k) {
    const Parsed& p = a.p;
    const std::string kl = lower(kname);
    // The op that names the kernel's class: with shapes the shaped op, else the innermost.
    const int by = o.op >= 0 ? o.op : o.named_op;
    if (e.cat == Cat::memcpy || e.cat == Cat::memset) {
        k.kernel_class = KernelClass::copy;
        if (e.bytes > 0)
            k.bytes = std::min<std::int64_t>(e.bytes, std::int64_t{1} << 50);
    } else if (starts_with(kl, "nccl")) {
        k.kernel_class = KernelClass::collective;
        read_collective(a, e, o, kname, k);
    } else if (o.sdpa >= 0 || contains(kl, "flash") || contains(kl, "fmha") ||
               (by >= 0 && (a.name(p.events[static_cast<std::size_t>(by)]) == "aten::bmm" ||
                            a.name(p.events[static_cast<std::size_t>(by)]) == "aten::baddbmm"))) {
        k.kernel_class = KernelClass::attention;
        const int s = o.sdpa >= 0 ? o.sdpa : by;
        if (s >= 0 && p.events[static_cast<std::size_t>(s)].dims >= 0)
            return &p.events[static_cast<std::size_t>(s)];
        if (s >= 0)
            k.op = a.name(p.events[static_cast<std::size_t>(s)]);
    } else if (by >= 0) {
        const std::string& n = a.name(p.events[static_cast<std::size_t>(by)]);
        static const std::set<std::string> gemms{
            "aten::mm",    "aten::addmm", "aten::_addmm_activation", "aten::matmul", "aten::linear",
            "aten::addmv", "aten::mv",    "aten::_scaled_mm",        "aten::dot"};
        k.kernel_class = gemms.count(n) ? KernelClass::gemm : KernelClass::elementwise;
        k.op = n;
        if (o.op >= 0)
            return &p.events[static_cast<std::size_t>(o.op)];
    } else if (!o.chain.empty()) {
        k.kernel_class = KernelClass::elementwise;
        k.op = a.name(p.events[static_cast<std::size_t>(o.chain[0])]);
    }
    return nullptr;
}

/// The kernels of the trace, each in `out.kernels` and, inside a step (or with no steps), in
/// the aggregated kernel measurements; with what the step and GEMM measurements need.
class KernelReader {
public:
    KernelReader(Analysis& a, KinetoTrace& out)
        : a_(a)
        , out_(out)
        , ks_(out.imported.measurements.kernels)
        , kernels_per_step_(out.steps.size(), 0)
        , busy_per_step_(out.steps.size()) {}

    void read(const Event& e) {
        TracedKernel tk;
        tk.start = sim::Time::ns(e.ts);
        tk.duration = sim::Time::ns(e.dur);
        tk.device = static_cast<int>(e.device >= 0 ? e.device : std::max<std::int64_t>(e.pid, 0));
        tk.stream = static_cast<int>(
            std::clamp<std::int64_t>(e.stream >= 0 ? e.stream : e.tid, 0, 1 << 30));
        const std::string kname = short_kernel_name(a_.name(e));
        const KernelOrigin o = kernel_origin(a_, e);
        if (o.chain.empty() && o.launch < 0)
            ++no_launch;
        tk.step = out_.steps.empty() ? -1 : step_at(out_.steps, o.cpu_time);
        tk.phase = o.phase;
        tk.layer = o.layer;

        KernelMeasurement k;
        k.kernel = kname;
        k.stream = tk.stream;
        k.phase = std::string(phase_name(o.phase));
        k.layer = o.layer;
        if (const Event* shape_op = classify_kernel(a_, e, o, kname, k))
            describe(e, *shape_op, o.op, k);
        tk.kernel_class = k.kernel_class;
        tk.name = static_cast<int>(out_.names.size());
        out_.names.push_back(kname);
        if (!k.op.empty()) {
            tk.op = static_cast<int>(out_.names.size());
            out_.names.push_back(k.op);
        }
        out_.kernels.push_back(tk);
        if (tk.step >= 0 || out_.steps.empty())
            aggregate(e, tk, std::move(k));
    }

    std::map<int, GemmInstance> gemm_by_op;                  ///< op event -> its kernels' time
    std::vector<std::pair<std::int64_t, std::int64_t>> busy; ///< kernels outside every step
    std::vector<std::int64_t>& kernels_per_step() { return kernels_per_step_; }
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>& busy_per_step() {
        return busy_per_step_;
    }
    std::size_t no_launch = 0;

private:
    void describe(const Event& e, const Event& shape_op, int op, KernelMeasurement& k) {
        k.op = a_.name(shape_op);
        const OpShapes shapes(a_.p, shape_op);
        shapes.describe(k);
        if (k.kernel_class == KernelClass::gemm) {
            if (auto g = shapes.gemm(k)) {
                g->first = ks_.size();
                auto it = gemm_by_op.emplace(op, *g).first;
                it->second.ns += e.dur;
            }
        } else if (k.kernel_class == KernelClass::attention) {
            shapes.attention(k);
        } else {
            shapes.memory(k);
        }
    }

    /// One point per (class, op, kernel, phase, layer, dtype, shapes, stream).
    void aggregate(const Event& e, const TracedKernel& tk, KernelMeasurement k) {
        std::string key =
            fmt::format("{}|{}|{}|{}|{}|{}|{}|", static_cast<int>(k.kernel_class), k.op, k.kernel,
                        k.phase, k.layer, k.dtype ? static_cast<int>(*k.dtype) : -1, k.stream);
        for (const auto& s : k.shapes)
            key += fmt::format("[{}]", fmt::join(s, ","));
        auto [it, inserted] = groups_.emplace(key, ks_.size());
        if (inserted) {
            k.calls = 0;
            k.time = sim::Time::zero();
            k.source = fmt::format("{}: traceEvents[{}]", a_.file, e.index);
            ks_.push_back(std::move(k));
        }
        KernelMeasurement& g = ks_[it->second];
        ++g.calls;
        g.time += tk.duration;
        if (tk.step >= 0) {
            ++kernels_per_step_[static_cast<std::size_t>(tk.step)];
            busy_per_step_[static_cast<std::size_t>(tk.step)].emplace_back(e.ts, e.ts + e.dur);
        } else
            busy.emplace_back(e.ts, e.ts + e.dur);
    }

    Analysis& a_;
    KinetoTrace& out_;
    std::vector<KernelMeasurement>& ks_;
    std::map<std::string, std::size_t> groups_;
    std::vector<std::int64_t> kernels_per_step_;
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> busy_per_step_;
};

/// Launch overhead: the median launch call, kept with the whole step (as a `launches` point it
/// would collide with the same count of another trace's).
sim::Time launch_median(const Analysis& a) {
    std::vector<std::int64_t> launch_ns;
    for (const Event& e : a.p.events)
        if (e.cat == Cat::runtime && contains(a.name(e), "LaunchKernel"))
            launch_ns.push_back(e.dur);
    if (launch_ns.empty())
        return sim::Time::zero();
    std::sort(launch_ns.begin(), launch_ns.end());
    return sim::Time::ns(std::max<std::int64_t>(launch_ns[launch_ns.size() / 2], 0));
}

/// Nanoseconds covered by the union of intervals `v`.
std::int64_t union_ns(std::vector<std::pair<std::int64_t, std::int64_t>> v) {
    std::sort(v.begin(), v.end());
    std::int64_t total = 0, cur_s = 0, cur_e = std::numeric_limits<std::int64_t>::min();
    for (auto [s, e] : v) {
        if (s > cur_e) {
            if (cur_e > cur_s)
                total += cur_e - cur_s;
            cur_s = s;
            cur_e = e;
        } else
            cur_e = std::max(cur_e, e);
    }
    if (cur_e > cur_s)
        total += cur_e - cur_s;
    return total;
}

/// The whole step: with no profiler steps, the trace as one step; else the mean over the
/// steps (and, with --set, a training-step measurement of it).
void whole_step(KinetoTrace& out, KernelReader& kernels, sim::Time launch, const Environment& env,
                const std::string& name, const ImportOptions& options) {
    ImportResult& r = out.imported;
    if (out.steps.empty()) {
        r.warnings.push_back(name + ": no ProfilerStep# ranges (call prof.step() once per "
                                    "iteration): the whole trace is taken as one step");
        std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
        for (const auto& k : out.kernels) {
            first = std::min(first, k.start.picoseconds() / 1000);
            last = std::max(last, (k.start + k.duration).picoseconds() / 1000);
        }
        if (last > first) {
            TraceStepMeasurement t;
            t.steps = 1;
            t.time = sim::Time::ns(last - first);
            t.busy = std::min(t.time, sim::Time::ns(union_ns(kernels.busy)));
            t.launch = launch;
            t.kernels = static_cast<std::int64_t>(out.kernels.size());
            t.source = name;
            if (t.busy > sim::Time::zero())
                r.measurements.trace_steps.push_back(t);
        }
        return;
    }
    std::int64_t total = 0, total_busy = 0, total_kernels = 0;
    for (std::size_t s = 0; s < out.steps.size(); ++s) {
        total += (out.steps[s].end - out.steps[s].start).picoseconds() / 1000;
        total_busy += union_ns(kernels.busy_per_step()[s]);
        total_kernels += kernels.kernels_per_step()[s];
    }
    const auto n = static_cast<std::int64_t>(out.steps.size());
    TraceStepMeasurement t;
    t.steps = static_cast<int>(n);
    t.time = sim::Time::ns(std::max<std::int64_t>(total / n, 1));
    t.busy = std::min(t.time, sim::Time::ns(std::max<std::int64_t>(total_busy / n, 1)));
    t.launch = launch;
    t.kernels = total_kernels / n;
    t.source = fmt::format("{}: {} to {}", name, out.steps.front().name, out.steps.back().name);
    r.measurements.trace_steps.push_back(t);
    // Kernels' times are summed over the steps and kept as totals with `calls`;
    // TraceStepMeasurement::steps says over how many.
    if (!options.step_settings.empty()) {
        StepMeasurement step;
        step.gpus = env.device_count;
        for (const auto& s : options.step_settings)
            apply_setting(step, s, "--set");
        step.time = t.time;
        step.source = t.source;
        r.measurements.steps.push_back(step);
    }
}

} // namespace

KinetoTrace read_kineto_trace(std::string_view text, const std::string& name,
                              const ImportOptions& options) {
    Parsed p = parse_trace(text, name);
    rebase_times(p, name);
    KinetoTrace out;
    ImportResult& r = out.imported;
    if (p.skipped_times > 0)
        r.warnings.push_back(fmt::format("{}: {} events without a valid ts or dur were skipped",
                                         name, p.skipped_times));
    if (p.bad_dims > 0)
        r.warnings.push_back(fmt::format("{}: {} tensor dimensions in Input Dims or Input "
                                         "Strides are negative or above {}; read as unknown",
                                         name, p.bad_dims, kMaxDim));
    const std::vector<int> order = time_order(p);
    Analysis a{p, name, {}, {}, {}, {}, std::vector<int>(p.names.size(), -2), {}, true};
    index_events(a, order, r.warnings);
    const Environment env = trace_environment(p, name, options);
    r.measurements.environment = env;
    out.steps = profiler_steps(a, order);
    index_layers_by_seq(a);

    KernelReader kernels(a, out);
    for (int i : order) {
        const Event& e = p.events[static_cast<std::size_t>(i)];
        if (e.cat == Cat::kernel || e.cat == Cat::memcpy || e.cat == Cat::memset)
            kernels.read(e);
    }
    // Kernels have zero time only when the trace rounds them to 0: drop such groups.
    std::erase_if(r.measurements.kernels,
                  [](const KernelMeasurement& k) { return k.time <= sim::Time::zero(); });
    if (kernels.no_launch > 0)
        r.warnings.push_back(fmt::format("{}: {} kernels have no launch call or op in the trace "
                                         "(class 'other')",
                                         name, kernels.no_launch));
    for (GemmMeasurement& g : gemm_medians(kernels.gemm_by_op, name))
        r.measurements.gemms.push_back(std::move(g));
    whole_step(out, kernels, launch_median(a), env, name, options);
    if (options.step_settings.empty())
        r.warnings.push_back(name + ": the step is not recorded as a training step (the trace "
                                    "does not say the model): pass --set model.kind=transformer "
                                    "--set model.hidden=... to record it");
    return out;
}

ImportResult import_kineto(std::string_view text, const std::string& name,
                           const ImportOptions& options) {
    return read_kineto_trace(text, name, options).imported;
}

} // namespace clustersim::calibrate
