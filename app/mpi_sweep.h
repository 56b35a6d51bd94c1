#pragma once
/// \file
/// The little of MPI that a sweep across machines needs: start and stop, the rank and the
/// number of ranks, a broadcast from rank 0, and messages of text to and from rank 0. Built
/// only with CLUSTERSIM_WITH_MPI (OpenMPI from Debian); without it `available()` is false and
/// a Session refuses to start.
///
/// Threads: workers never call MPI; only the thread that created the Session does
/// (MPI_THREAD_FUNNELED).

#include "explore/distribute.h"

#include <string>

namespace clustersim::app::mpi {

/// Whether this clustersim was built with MPI.
bool available();

/// MPI from MPI_Init to MPI_Finalize. One per process. Throws InputError when MPI is not
/// available.
class Session : public explore::Transport {
public:
    Session();
    ~Session() override;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }

    /// Rank 0's `text` on every rank.
    void broadcast(std::string& text) const;
    void send_to_root(const std::string& text, explore::MessageTag tag) const override;
    bool receive(std::string& text, int& source, explore::MessageTag& tag,
                 bool wait) const override;
    /// Waits until every rank has called it.
    void barrier() const;
    /// Stops every rank (after an error on one of them).
    [[noreturn]] void abort(int code) const;

private:
    int rank_ = 0;
    int size_ = 1;
};

} // namespace clustersim::app::mpi
