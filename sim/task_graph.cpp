#include "sim/task_graph.h"

#include <stdexcept>

namespace clustersim::sim {

StreamId TaskGraph::add_stream(std::string name, std::int32_t group) {
    streams_.push_back(Stream{std::move(name), group});
    return static_cast<StreamId>(streams_.size() - 1);
}

TaskId TaskGraph::add_task(Task task) {
    if (task.stream != kNoStream && task.stream >= streams_.size())
        throw std::invalid_argument("task '" + task.name + "' names an unknown stream");
    if (task.duration < Time::zero())
        throw std::invalid_argument("task '" + task.name + "' has a negative duration");
    tasks_.push_back(std::move(task));
    return static_cast<TaskId>(tasks_.size() - 1);
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
    if (before >= tasks_.size() || after >= tasks_.size())
        throw std::invalid_argument("dependency names an unknown task");
    if (before == after)
        throw std::invalid_argument("task '" + tasks_[before].name + "' depends on itself");
    deps_.emplace_back(before, after);
}

TaskExecutor::TaskExecutor(Engine& engine, TaskGraph& graph)
    : engine_(engine)
    , graph_(graph) {
    const std::size_t n = graph.task_count();
    waiting_on_.assign(n, 0);
    succ_offset_.assign(n + 1, 0);
    for (auto [before, after] : graph.dependencies()) {
        ++waiting_on_[after];
        ++succ_offset_[before + 1];
    }
    for (std::size_t i = 0; i < n; ++i)
        succ_offset_[i + 1] += succ_offset_[i];
    succ_.resize(graph.dependencies().size());
    std::vector<std::uint32_t> fill(succ_offset_.begin(), succ_offset_.end() - 1);
    for (auto [before, after] : graph.dependencies())
        succ_[fill[before]++] = after;

    stream_tasks_.resize(graph.stream_count());
    for (TaskId t = 0; t < n; ++t) {
        if (graph.task(t).stream != kNoStream)
            stream_tasks_[graph.task(t).stream].push_back(t);
    }
    stream_head_.assign(graph.stream_count(), 0);
    stream_busy_.assign(graph.stream_count(), 0);
    started_.assign(n, 0);
    start_.assign(n, Time::max());
    end_.assign(n, Time::max());
}

void TaskExecutor::start() {
    for (TaskId t = 0; t < graph_.task_count(); ++t)
        try_start(t);
}

void TaskExecutor::try_start(TaskId id) {
    if (started_[id] || waiting_on_[id] != 0)
        return;
    const StreamId s = graph_.task(id).stream;
    if (s != kNoStream) {
        if (stream_busy_[s] || stream_tasks_[s][stream_head_[s]] != id)
            return;
        stream_busy_[s] = 1;
    }
    begin(id);
}

void TaskExecutor::begin(TaskId id) {
    started_[id] = 1;
    start_[id] = engine_.now();
    on_task_start.emit(id, engine_.now());
    const Task& task = graph_.task(id);
    if (task.action) {
        task.action(id, [this, id] { end(id); });
    } else {
        engine_.after(task.duration, [this, id] { end(id); });
    }
}

void TaskExecutor::end(TaskId id) {
    if (end_[id] != Time::max())
        throw std::logic_error("task '" + graph_.task(id).name + "' reported done twice");
    end_[id] = engine_.now();
    ++ended_;
    on_task_end.emit(id, engine_.now());
    const StreamId s = graph_.task(id).stream;
    if (s != kNoStream) {
        stream_busy_[s] = 0;
        if (++stream_head_[s] < stream_tasks_[s].size())
            try_start(stream_tasks_[s][stream_head_[s]]);
    }
    for (std::uint32_t k = succ_offset_[id]; k < succ_offset_[id + 1]; ++k) {
        const TaskId next = succ_[k];
        if (--waiting_on_[next] == 0)
            try_start(next);
    }
}

void TaskExecutor::require_finished() const {
    if (finished())
        return;
    std::string stuck;
    int shown = 0;
    for (TaskId t = 0; t < graph_.task_count() && shown < 5; ++t) {
        if (!started_[t]) {
            stuck += (shown ? ", '" : "'") + graph_.task(t).name + "'";
            ++shown;
        }
    }
    throw std::logic_error("task graph stalled with " +
                           std::to_string(graph_.task_count() - ended_) +
                           " tasks unfinished (a dependency cycle or one against stream order); "
                           "first never started: " +
                           stuck);
}

} // namespace clustersim::sim
