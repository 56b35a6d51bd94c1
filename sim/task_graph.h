#pragma once
/// \file
/// Task graphs executed on in-order streams, as CUDA runs kernels on streams.
///
/// A task starts when every task it depends on has ended and it is at the head of its stream
/// (the task before it on that stream has ended). A task either lasts a fixed duration or runs
/// an asynchronous action that reports completion (a network transfer, a collective). Overlap
/// of compute and communication falls out of this rule; nothing else is needed.
///
/// Observers may subscribe to `on_task_start` and `on_task_end` (the tests check the stream
/// and dependency rules through them); the model code does not know they exist. The step's
/// traces and timelines are not built from them: the executors record what ran
/// (strategies/parallel/executed_step.h), the same record in both fidelities.

#include "sim/engine.h"
#include "sim/signal.h"
#include "sim/time.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace clustersim::sim {

using TaskId = std::uint32_t;
using StreamId = std::uint32_t;
/// A task on no stream starts as soon as its dependencies are done.
inline constexpr StreamId kNoStream = std::numeric_limits<StreamId>::max();

/// An asynchronous action: do the work, call `done()` once when it is finished.
using TaskAction = std::function<void(TaskId, std::function<void()> done)>;

struct Stream {
    std::string name;
    std::int32_t group = 0; ///< groups streams for observers (a trace's process); opaque here
};

struct Task {
    std::string name;
    StreamId stream = kNoStream;
    Time duration = Time::zero(); ///< used when `action` is empty
    TaskAction action;
};

/// The description of work: streams, tasks and dependencies. Built once, executed once.
class TaskGraph {
public:
    StreamId add_stream(std::string name, std::int32_t group = 0);
    /// Adds a task at the tail of its stream.
    TaskId add_task(Task task);
    /// `after` may start only when `before` has ended.
    void add_dependency(TaskId before, TaskId after);

    std::size_t task_count() const { return tasks_.size(); }
    std::size_t stream_count() const { return streams_.size(); }
    const Task& task(TaskId id) const { return tasks_.at(id); }
    Task& task(TaskId id) { return tasks_.at(id); }
    const Stream& stream(StreamId id) const { return streams_.at(id); }
    const std::vector<std::pair<TaskId, TaskId>>& dependencies() const { return deps_; }

private:
    std::vector<Stream> streams_;
    std::vector<Task> tasks_;
    std::vector<std::pair<TaskId, TaskId>> deps_;
};

/// Runs a TaskGraph on an Engine.
class TaskExecutor {
public:
    /// The graph must outlive the executor and not change while it runs.
    TaskExecutor(Engine& engine, TaskGraph& graph);
    TaskExecutor(const TaskExecutor&) = delete;
    TaskExecutor& operator=(const TaskExecutor&) = delete;

    /// Starts every task that can start now; the engine's run() does the rest.
    void start();

    bool finished() const { return ended_ == graph_.task_count(); }
    std::size_t tasks_ended() const { return ended_; }
    /// Throws std::logic_error naming the stuck tasks if the graph did not run to the end
    /// (a dependency cycle, or a dependency against stream order).
    void require_finished() const;

    Time start_time(TaskId id) const { return start_.at(id); }
    Time end_time(TaskId id) const { return end_.at(id); }

    Signal<TaskId, Time> on_task_start;
    Signal<TaskId, Time> on_task_end;

private:
    void try_start(TaskId id);
    void begin(TaskId id);
    void end(TaskId id);

    Engine& engine_;
    TaskGraph& graph_;
    std::vector<std::uint32_t> waiting_on_; ///< unfinished dependencies per task
    std::vector<std::uint32_t> succ_offset_;
    std::vector<TaskId> succ_;
    std::vector<std::vector<TaskId>> stream_tasks_;
    std::vector<std::size_t> stream_head_;
    std::vector<char> stream_busy_;
    std::vector<char> started_;
    std::vector<Time> start_, end_;
    std::size_t ended_ = 0;
};

} // namespace clustersim::sim
