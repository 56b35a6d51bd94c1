#include "explore/distribute.h"

#include <sstream>

namespace clustersim::explore {

std::vector<std::int64_t> rank_share(const std::vector<std::int64_t>& todo, int rank, int ranks) {
    std::vector<std::int64_t> mine;
    for (std::size_t i = 0; i < todo.size(); ++i) {
        if (static_cast<int>(i % static_cast<std::size_t>(ranks)) == rank)
            mine.push_back(todo[i]);
    }
    return mine;
}

std::string encode_plan(const std::set<std::int64_t>& done) {
    std::string plan = "ok\n";
    for (std::int64_t d : done)
        plan += std::to_string(d) + "\n";
    return plan;
}

std::string encode_plan_error(const std::string& message) {
    return "error\n" + message;
}

Plan decode_plan(const std::string& text) {
    Plan p;
    if (text.rfind("error\n", 0) == 0) {
        p.error = text.substr(6);
        return p;
    }
    std::istringstream in(text.substr(3));
    for (std::string line; std::getline(in, line);)
        p.done.insert(std::stoll(line));
    return p;
}

std::string join_rows(const std::vector<std::string>& rows) {
    std::string text;
    for (const auto& row : rows)
        text += row + "\n";
    if (!text.empty())
        text.pop_back();
    return text;
}

std::vector<std::pair<std::int64_t, std::string>> split_rows(const std::string& text) {
    std::vector<std::pair<std::int64_t, std::string>> rows;
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string::npos)
            nl = text.size();
        std::string row = text.substr(pos, nl - pos);
        const std::int64_t index = std::stoll(row.substr(0, row.find(',')));
        rows.emplace_back(index, std::move(row));
        pos = nl + 1;
    }
    return rows;
}

} // namespace clustersim::explore
