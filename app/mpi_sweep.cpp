#include "app/mpi_sweep.h"

#include "base/error.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#ifdef CLUSTERSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace clustersim::app::mpi {

#ifdef CLUSTERSIM_HAVE_MPI

bool available() {
    return true;
}

Session::Session() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized)
        throw InputError("--mpi: MPI was already started in this process");
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        throw InputError("--mpi: MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Session::~Session() {
    MPI_Finalize();
}

void Session::broadcast(std::string& text) const {
    long long n = static_cast<long long>(text.size());
    MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    text.resize(static_cast<std::size_t>(n));
    // Chunks below 2^31 bytes: MPI counts are ints.
    constexpr long long kChunk = 1 << 30;
    for (long long off = 0; off < n; off += kChunk)
        MPI_Bcast(text.data() + off, static_cast<int>(std::min(kChunk, n - off)), MPI_CHAR, 0,
                  MPI_COMM_WORLD);
}

void Session::send_to_root(const std::string& text, explore::MessageTag tag) const {
    MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, static_cast<int>(tag),
             MPI_COMM_WORLD);
}

bool Session::receive(std::string& text, int& source, explore::MessageTag& tag, bool wait) const {
    MPI_Status status;
    if (wait) {
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
    } else {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
        if (!flag)
            return false;
    }
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    text.resize(static_cast<std::size_t>(count));
    MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    source = status.MPI_SOURCE;
    // Only clustersim's ranks are in this communicator; a tag it does not know is an error.
    switch (status.MPI_TAG) {
    case static_cast<int>(explore::MessageTag::rows):
    case static_cast<int>(explore::MessageTag::done):
    case static_cast<int>(explore::MessageTag::error):
        tag = static_cast<explore::MessageTag>(status.MPI_TAG);
        break;
    default:
        text = "unknown MPI message tag " + std::to_string(status.MPI_TAG);
        tag = explore::MessageTag::error;
    }
    return true;
}

void Session::barrier() const {
    MPI_Barrier(MPI_COMM_WORLD);
}

void Session::abort(int code) const {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
}

#else

bool available() {
    return false;
}

Session::Session() {
    throw InputError("--mpi: this clustersim was built without MPI; install OpenMPI "
                     "(apt-get install libopenmpi-dev) and configure with "
                     "-DCLUSTERSIM_WITH_MPI=ON");
}

Session::~Session() = default;

void Session::broadcast(std::string&) const {
}

void Session::send_to_root(const std::string&, explore::MessageTag) const {
}

bool Session::receive(std::string&, int&, explore::MessageTag&, bool) const {
    return false;
}

void Session::barrier() const {
}

void Session::abort(int code) const {
    std::exit(code);
}

#endif

} // namespace clustersim::app::mpi
