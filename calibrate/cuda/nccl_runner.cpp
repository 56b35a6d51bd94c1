// NCCL collectives and point-to-point transfers over a size sweep, as nccl-tests measures
// them: one process drives every GPU through a communicator from ncclCommInitAll; each size
// is first run once on patterned data and checked (the #wrong count), then warmed up and
// timed as the median of batches (CUDA events on every GPU's stream; a batch's time is the
// slowest GPU's).
//
// Sizes follow nccl-tests: `bytes` is the whole buffer; for all-gather, reduce-scatter,
// all-to-all, gather and scatter it is rounded down to a multiple of GPUs x element size.
//
// One process per GPU across nodes (MPI, ncclCommInitRank) is not implemented: the
// communicator setup is the only piece that differs (see `Communicator`).
#include "calibrate/cuda/kernels.h"
#include "calibrate/cuda/runners.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>

namespace clustersim::calibrate::cuda {
namespace {

/// One communicator over the devices of this process, with a stream per device.
class Communicator {
public:
    explicit Communicator(const std::vector<int>& devices)
        : devices_(devices) {
        comms_.resize(devices.size(), nullptr);
        check(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()),
              "ncclCommInitAll");
        for (int d : devices)
            streams_.emplace_back(d);
    }
    ~Communicator() {
        for (auto c : comms_) {
            if (c != nullptr)
                (void)ncclCommDestroy(c);
        }
    }
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int size() const { return static_cast<int>(devices_.size()); }
    int device(int rank) const { return devices_[static_cast<std::size_t>(rank)]; }
    ncclComm_t comm(int rank) const { return comms_[static_cast<std::size_t>(rank)]; }
    cudaStream_t stream(int rank) const { return streams_[static_cast<std::size_t>(rank)].get(); }
    std::vector<const Stream*> streams() const {
        std::vector<const Stream*> out;
        for (const auto& s : streams_)
            out.push_back(&s);
        return out;
    }
    void synchronize() const {
        for (const auto& s : streams_) {
            check(cudaSetDevice(s.device()), "cudaSetDevice");
            check(cudaStreamSynchronize(s.get()), "cudaStreamSynchronize");
        }
    }

private:
    std::vector<int> devices_;
    std::vector<ncclComm_t> comms_;
    std::vector<Stream> streams_;
};

bool has_in_place(CollectiveOp op) {
    switch (op) {
    case CollectiveOp::all_reduce:
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
        return true;
    default:
        return false;
    }
}

/// The algorithm when the person forced one with NCCL_ALGO (one name); else unknown.
std::string forced_algorithm() {
    const char* env = std::getenv("NCCL_ALGO");
    if (env == nullptr)
        return "";
    std::string a;
    for (const char* c = env; *c != 0; ++c)
        a += static_cast<char>(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    if (a == "nvlstree")
        a = "nvls_tree";
    static const std::set<std::string> known{"ring",           "tree",          "nvls", "nvls_tree",
                                             "collnet_direct", "collnet_chain", "pat"};
    return known.count(a) != 0 ? a : "";
}

class CollectiveBench {
public:
    CollectiveBench(const Communicator& comm, std::vector<DeviceBuffer>& send,
                    std::vector<DeviceBuffer>& recv)
        : c_(comm)
        , send_(send)
        , recv_(recv) {}

    /// Enqueues one collective on every rank (one NCCL group).
    void issue(CollectiveOp op, const Layout& l, bool in_place) const {
        const ncclDataType_t dt = ncclFloat32;
        const std::size_t w = 4;
        const int n = c_.size();
        check(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < n; ++r) {
            const auto ur = static_cast<std::size_t>(r);
            char* sb = send_[ur].bytes();
            char* rb = recv_[ur].bytes();
            ncclComm_t comm = c_.comm(r);
            cudaStream_t s = c_.stream(r);
            switch (op) {
            case CollectiveOp::all_reduce:
                check(ncclAllReduce(in_place ? rb : sb, rb, l.count, dt, ncclSum, comm, s),
                      "ncclAllReduce");
                break;
            case CollectiveOp::broadcast:
                check(ncclBroadcast(in_place ? rb : sb, rb, l.count, dt, 0, comm, s),
                      "ncclBroadcast");
                break;
            case CollectiveOp::reduce:
                check(ncclReduce(in_place ? rb : sb, rb, l.count, dt, ncclSum, 0, comm, s),
                      "ncclReduce");
                break;
            case CollectiveOp::all_gather:
                check(
                    ncclAllGather(in_place ? rb + ur * l.count * w : sb, rb, l.count, dt, comm, s),
                    "ncclAllGather");
                break;
            case CollectiveOp::reduce_scatter:
                check(ncclReduceScatter(in_place ? rb : sb, in_place ? rb + ur * l.count * w : rb,
                                        l.count, dt, ncclSum, comm, s),
                      "ncclReduceScatter");
                break;
            case CollectiveOp::all_to_all:
                // As nccl-tests' alltoall_perf: grouped sends and receives with every peer.
                for (int p = 0; p < n; ++p) {
                    const auto up = static_cast<std::size_t>(p);
                    check(ncclSend(sb + up * l.count * w, l.count, dt, p, comm, s), "ncclSend");
                    check(ncclRecv(rb + up * l.count * w, l.count, dt, p, comm, s), "ncclRecv");
                }
                break;
            case CollectiveOp::send_recv:
                // As nccl-tests' sendrecv_perf: every rank sends to the next, receives from
                // the previous.
                check(ncclSend(sb, l.count, dt, (r + 1) % n, comm, s), "ncclSend");
                check(ncclRecv(rb, l.count, dt, (r + n - 1) % n, comm, s), "ncclRecv");
                break;
            case CollectiveOp::gather:
                if (r == 0) {
                    for (int p = 0; p < n; ++p)
                        check(ncclRecv(rb + static_cast<std::size_t>(p) * l.count * w, l.count, dt,
                                       p, comm, s),
                              "ncclRecv");
                }
                check(ncclSend(sb, l.count, dt, 0, comm, s), "ncclSend");
                break;
            case CollectiveOp::scatter:
                if (r == 0) {
                    for (int p = 0; p < n; ++p)
                        check(ncclSend(sb + static_cast<std::size_t>(p) * l.count * w, l.count, dt,
                                       p, comm, s),
                              "ncclSend");
                }
                check(ncclRecv(rb, l.count, dt, 0, comm, s), "ncclRecv");
                break;
            }
        }
        check(ncclGroupEnd(), "ncclGroupEnd");
    }

    /// Fills the inputs with the pattern, poisons the outputs, runs once and counts wrong
    /// elements on every rank that has a defined result.
    std::int64_t check_once(CollectiveOp op, const Layout& l, bool in_place) const {
        const int n = c_.size();
        const auto t = ElementType::f32;
        const std::size_t w = 4;
        for (int r = 0; r < n; ++r) {
            const auto ur = static_cast<std::size_t>(r);
            cudaStream_t s = c_.stream(r);
            check(cudaSetDevice(c_.device(r)), "cudaSetDevice");
            check(cudaMemsetAsync(recv_[ur].get(), 0xff, l.recv * w, s), "cudaMemsetAsync");
            if (!in_place) {
                check(fill_pattern(send_[ur].get(), l.send, t, r, 0, s), "fill_pattern");
            } else if (op == CollectiveOp::all_gather) {
                check(fill_pattern(recv_[ur].bytes() + ur * l.count * w, l.count, t, r, 0, s),
                      "fill_pattern");
            } else {
                // reduce_scatter reads the whole buffer; the others their count.
                check(fill_pattern(recv_[ur].get(), std::max(l.send, l.recv), t, r, 0, s),
                      "fill_pattern");
            }
        }
        issue(op, l, in_place);
        std::vector<DeviceBuffer> counters;
        for (int r = 0; r < n; ++r) {
            const auto ur = static_cast<std::size_t>(r);
            counters.emplace_back(c_.device(r), sizeof(unsigned long long));
            cudaStream_t s = c_.stream(r);
            check(cudaMemsetAsync(counters.back().get(), 0, sizeof(unsigned long long), s),
                  "cudaMemsetAsync");
            CheckSpec spec;
            spec.nranks = n;
            spec.rank = r;
            std::size_t count = l.recv;
            bool checked = true;
            switch (op) {
            case CollectiveOp::all_reduce:
                spec.mode = CheckSpec::sum;
                break;
            case CollectiveOp::broadcast:
                spec.mode = CheckSpec::from_rank;
                break;
            case CollectiveOp::reduce:
                spec.mode = CheckSpec::sum;
                checked = r == 0;
                break;
            case CollectiveOp::all_gather:
                spec.mode = CheckSpec::gathered;
                spec.block = l.count;
                break;
            case CollectiveOp::gather:
                spec.mode = CheckSpec::gathered;
                spec.block = l.count;
                checked = r == 0;
                break;
            case CollectiveOp::reduce_scatter:
                spec.mode = CheckSpec::sum;
                spec.offset = ur * l.count;
                count = l.count;
                break;
            case CollectiveOp::scatter:
                spec.mode = CheckSpec::from_rank;
                spec.offset = ur * l.count;
                count = l.count;
                break;
            case CollectiveOp::all_to_all:
                spec.mode = CheckSpec::all_to_all;
                spec.block = l.count;
                break;
            case CollectiveOp::send_recv:
                spec.mode = CheckSpec::from_rank;
                spec.root = (r + n - 1) % n;
                break;
            }
            const char* out = recv_[ur].bytes();
            if (in_place && op == CollectiveOp::reduce_scatter)
                out += ur * l.count * w;
            if (checked)
                check(count_wrong(out, count, t, spec,
                                  static_cast<unsigned long long*>(counters.back().get()), s),
                      "count_wrong");
        }
        c_.synchronize();
        std::int64_t wrong = 0;
        for (auto& counter : counters) {
            unsigned long long v = 0;
            check(cudaMemcpy(&v, counter.get(), sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy");
            wrong += static_cast<std::int64_t>(v);
        }
        return wrong;
    }

private:
    const Communicator& c_;
    std::vector<DeviceBuffer>& send_;
    std::vector<DeviceBuffer>& recv_;
};

/// The largest buffer that fits twice (send and receive) on every device, with room left
/// for NCCL and the check counters.
std::size_t buffer_budget(const std::vector<int>& devices) {
    std::size_t least = SIZE_MAX;
    for (int d : devices)
        least = std::min(least, free_memory(d));
    const std::size_t reserve = std::size_t{1} << 30; // NCCL's own buffers and headroom
    return least > reserve ? (least - reserve) / 2 : 0;
}

} // namespace

Layout layout_for(CollectiveOp op, std::size_t nominal, std::size_t elem, int n) {
    Layout l;
    const std::size_t total = nominal / elem;
    const auto ranks = static_cast<std::size_t>(n);
    switch (op) {
    case CollectiveOp::all_reduce:
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv:
        l.count = total;
        l.send = l.recv = total;
        l.bytes = total * elem;
        break;
    case CollectiveOp::all_gather:
    case CollectiveOp::gather:
        l.count = total / ranks; // per-rank block
        l.send = l.count;
        l.recv = l.count * ranks;
        l.bytes = l.count * ranks * elem;
        break;
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::scatter:
        l.count = total / ranks;
        l.send = l.count * ranks;
        l.recv = l.count;
        l.bytes = l.count * ranks * elem;
        break;
    case CollectiveOp::all_to_all:
        l.count = total / ranks;
        l.send = l.recv = l.count * ranks;
        l.bytes = l.count * ranks * elem;
        break;
    }
    return l;
}

std::vector<std::size_t> sweep(std::int64_t min, std::int64_t max, int factor) {
    std::vector<std::size_t> sizes;
    for (auto s = static_cast<std::size_t>(min); s <= static_cast<std::size_t>(max);
         s *= static_cast<std::size_t>(factor))
        sizes.push_back(s);
    return sizes;
}

std::vector<CollectiveMeasurement> run_collectives(const Context& ctx) {
    const RunOptions& o = *ctx.options;
    const int n = static_cast<int>(ctx.devices.size());
    ctx.report(fmt::format("collectives on {} GPUs: NCCL communicator (ncclCommInitAll)", n));
    Communicator comm(ctx.devices);
    const std::size_t budget = buffer_budget(ctx.devices);
    const std::size_t largest =
        std::min<std::size_t>(static_cast<std::size_t>(o.max_bytes), budget);
    if (largest < static_cast<std::size_t>(o.max_bytes))
        ctx.warn(fmt::format("collectives: sizes above {} skipped: two buffers of that size are "
                             "what fits in the GPUs' free memory",
                             format_size(largest)));
    std::vector<DeviceBuffer> send;
    std::vector<DeviceBuffer> recv;
    for (int d : ctx.devices) {
        send.emplace_back(d, largest);
        recv.emplace_back(d, largest);
    }
    CollectiveBench bench(comm, send, recv);
    const std::string algorithm = forced_algorithm();
    const CollectiveOp ops[] = {
        CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
        CollectiveOp::broadcast,  CollectiveOp::reduce,     CollectiveOp::all_to_all,
        CollectiveOp::send_recv,  CollectiveOp::gather,     CollectiveOp::scatter};
    std::vector<CollectiveMeasurement> out;
    for (const auto op : ops) {
        double peak = 0;
        int points = 0;
        std::set<std::size_t> done;
        for (const std::size_t nominal : sweep(o.min_bytes, o.max_bytes, o.factor)) {
            if (nominal > largest)
                break;
            const Layout l = layout_for(op, nominal, 4, n);
            if (l.bytes == 0 || !done.insert(l.bytes).second)
                continue; // too small to split over the GPUs, as nccl-tests' size-0 rows
            for (const bool in_place : {false, true}) {
                if (in_place && (!o.in_place || !has_in_place(op)))
                    continue;
                CollectiveMeasurement m;
                m.op = op;
                m.algorithm = algorithm;
                m.gpus = n;
                m.bytes = static_cast<std::int64_t>(l.bytes);
                m.dtype = hardware::Dtype::fp32;
                m.in_place = in_place;
                m.wrong = bench.check_once(op, l, in_place);
                if (*m.wrong > 0) {
                    ctx.warn(fmt::format("{} {} on {} GPUs ({}): {} wrong elements: point "
                                         "skipped",
                                         to_string(op), format_size(l.bytes), n,
                                         in_place ? "in-place" : "out-of-place", *m.wrong));
                    continue;
                }
                const double seconds =
                    time_median(ctx.timing, comm.streams(), [&] { bench.issue(op, l, in_place); });
                m.time = sim::Time::from_seconds(seconds);
                if (m.time <= sim::Time::zero())
                    m.time = sim::Time::ps(1);
                peak = std::max(peak, m.busbw());
                ++points;
                out.push_back(m);
            }
        }
        ctx.report(fmt::format("  {:<15} {} points, peak busbw {:.1f} GB/s", to_string(op), points,
                               peak / 1e9));
    }
    return out;
}

std::vector<P2pMeasurement> run_p2p(const Context& ctx) {
    const RunOptions& o = *ctx.options;
    const int n = static_cast<int>(ctx.devices.size());
    Communicator comm(ctx.devices);
    const std::size_t largest =
        std::min<std::size_t>(static_cast<std::size_t>(o.max_bytes), buffer_budget(ctx.devices));
    std::vector<DeviceBuffer> send;
    std::vector<DeviceBuffer> recv;
    for (int d : ctx.devices) {
        send.emplace_back(d, largest);
        recv.emplace_back(d, largest);
    }
    // From GPU 0 to every other GPU (to GPU 1 only in --quick): on a switched node every pair
    // looks alike; on a PCIe box the pairs differ, and these show how.
    const int last = o.quick ? 1 : n - 1;
    const int factor = std::max(o.factor, 4); // a coarser sweep: one per pair
    std::vector<P2pMeasurement> out;
    for (int dst = 1; dst <= last; ++dst) {
        double peak = 0;
        for (const std::size_t nominal : sweep(o.min_bytes, o.max_bytes, factor)) {
            const std::size_t count = nominal / 4;
            if (nominal > largest || count == 0)
                continue;
            const auto src_r = static_cast<std::size_t>(0);
            const auto dst_r = static_cast<std::size_t>(dst);
            auto issue = [&] {
                check(ncclGroupStart(), "ncclGroupStart");
                check(ncclSend(send[src_r].get(), count, ncclFloat32, dst, comm.comm(0),
                               comm.stream(0)),
                      "ncclSend");
                check(ncclRecv(recv[dst_r].get(), count, ncclFloat32, 0, comm.comm(dst),
                               comm.stream(dst)),
                      "ncclRecv");
                check(ncclGroupEnd(), "ncclGroupEnd");
            };
            // The check: the destination holds the source's pattern.
            check(cudaSetDevice(comm.device(0)), "cudaSetDevice");
            check(fill_pattern(send[src_r].get(), count, ElementType::f32, 0, 0, comm.stream(0)),
                  "fill_pattern");
            check(cudaSetDevice(comm.device(dst)), "cudaSetDevice");
            check(cudaMemsetAsync(recv[dst_r].get(), 0xff, count * 4, comm.stream(dst)),
                  "cudaMemsetAsync");
            issue();
            DeviceBuffer counter(comm.device(dst), sizeof(unsigned long long));
            check(cudaMemsetAsync(counter.get(), 0, sizeof(unsigned long long), comm.stream(dst)),
                  "cudaMemsetAsync");
            CheckSpec spec;
            spec.mode = CheckSpec::from_rank;
            spec.root = 0;
            check(count_wrong(recv[dst_r].get(), count, ElementType::f32, spec,
                              static_cast<unsigned long long*>(counter.get()), comm.stream(dst)),
                  "count_wrong");
            comm.synchronize();
            unsigned long long wrong = 0;
            check(cudaMemcpy(&wrong, counter.get(), sizeof wrong, cudaMemcpyDeviceToHost),
                  "cudaMemcpy");
            if (wrong > 0) {
                ctx.warn(fmt::format("send/recv gpu0 -> gpu{} {}: {} wrong elements: point "
                                     "skipped",
                                     dst, format_size(nominal), wrong));
                continue;
            }
            const auto streams = comm.streams();
            const double seconds = time_median(ctx.timing, {streams[src_r], streams[dst_r]}, issue);
            P2pMeasurement m;
            m.src_gpu = ctx.devices[src_r];
            m.dst_gpu = ctx.devices[dst_r];
            m.bytes = static_cast<std::int64_t>(count * 4);
            m.time = std::max(sim::Time::from_seconds(seconds), sim::Time::ps(1));
            peak = std::max(peak, m.bandwidth());
            out.push_back(m);
        }
        ctx.report(fmt::format("  send/recv gpu0 -> gpu{}: peak {:.1f} GB/s", dst, peak / 1e9));
    }
    return out;
}

} // namespace clustersim::calibrate::cuda
