#include "strategies/parallel/layer_assignment.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace clustersim::strategies::parallel {

namespace {

constexpr const char* kLayoutKey = "parallel.pipeline_model_parallel_layout";
/// Longest unrolled layout accepted (a layout has a few characters per layer).
constexpr std::size_t kMaxLayout = std::size_t{1} << 20;

std::string quoted(const std::string& s) {
    return "'" + (s.size() > 60 ? s.substr(0, 57) + "..." : s) + "'";
}

/// Reads the repeat count after `*` at `at` (digits); advances `at`.
int repeat_count(const std::string& s, std::size_t& at, const std::string& layout,
                 const SplitFail& fail) {
    std::size_t end = at;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])))
        ++end;
    if (end == at)
        fail("pipeline_model_parallel_layout " + quoted(layout) +
                 ": '*' must be followed by a repeat count (like (tt|)*30 or t*4)",
             kLayoutKey);
    if (end - at > 6)
        fail("pipeline_model_parallel_layout " + quoted(layout) + ": repeat count " +
                 quoted(s.substr(at, end - at)) + " exceeds 999999",
             kLayoutKey);
    const int n = std::stoi(s.substr(at, end - at));
    at = end;
    return n;
}

void append_repeated(std::string& out, const std::string& what, int n, const std::string& layout,
                     const SplitFail& fail) {
    if (what.size() * static_cast<std::size_t>(n) + out.size() > kMaxLayout)
        fail("pipeline_model_parallel_layout " + quoted(layout) + " unrolls to more than " +
                 std::to_string(kMaxLayout) + " characters",
             kLayoutKey);
    for (int i = 0; i < n; ++i)
        out += what;
}

} // namespace

std::vector<std::string> parse_layout(const std::string& layout, const SplitFail& fail) {
    // Megatron-Core's PipelineParallelLayerLayout.parse_str_to_list: commas dropped, then
    // "(...)*n" unrolled (no nesting), then "x*n", then split at '|'.
    std::string s;
    for (char ch : layout) {
        if (ch != ',' && !std::isspace(static_cast<unsigned char>(ch)))
            s += ch;
    }
    std::string groups;
    for (std::size_t i = 0; i < s.size();) {
        if (s[i] == ')')
            fail("pipeline_model_parallel_layout " + quoted(layout) + ": ')' without '('",
                 kLayoutKey);
        if (s[i] != '(') {
            groups += s[i++];
            continue;
        }
        const std::size_t close = s.find(')', i);
        if (close == std::string::npos)
            fail("pipeline_model_parallel_layout " + quoted(layout) + ": '(' without ')'",
                 kLayoutKey);
        const std::string body = s.substr(i + 1, close - i - 1);
        if (body.empty() || body.find('(') != std::string::npos)
            fail("pipeline_model_parallel_layout " + quoted(layout) +
                     ": a group (...) must be non-empty and not nested",
                 kLayoutKey);
        if (close + 1 >= s.size() || s[close + 1] != '*')
            fail("pipeline_model_parallel_layout " + quoted(layout) +
                     ": a group (...) must be followed by *n",
                 kLayoutKey);
        std::size_t at = close + 2;
        const int n = repeat_count(s, at, layout, fail);
        append_repeated(groups, body, n, layout, fail);
        i = at;
    }
    std::string flat;
    for (std::size_t i = 0; i < groups.size();) {
        const char ch = groups[i++];
        if (ch == '*')
            fail("pipeline_model_parallel_layout " + quoted(layout) +
                     ": '*' must follow a layer or a group",
                 kLayoutKey);
        if (i < groups.size() && groups[i] == '*') {
            ++i;
            append_repeated(flat, std::string(1, ch), repeat_count(groups, i, layout, fail), layout,
                            fail);
        } else {
            flat += ch;
        }
    }
    std::vector<std::string> stages(1);
    for (char ch : flat) {
        if (ch == '|') {
            stages.emplace_back();
            continue;
        }
        if (ch != 'E' && ch != 't' && ch != 'L' && ch != 'm')
            fail("pipeline_model_parallel_layout " + quoted(layout) + ": unknown layer '" +
                     std::string(1, ch) +
                     "'; expected E (embedding), t (transformer layer), L (loss), m (MTP), "
                     "'|' between stages",
                 kLayoutKey);
        stages.back() += ch;
    }
    return stages;
}

bool uniform_split(const std::vector<int>& stage_layers) {
    return std::adjacent_find(stage_layers.begin(), stage_layers.end(), std::not_equal_to<>()) ==
           stage_layers.end();
}

std::vector<int> assign_layers(int layers, const PipelineSplit& split, const StageGrid& grid,
                               const SplitFail& fail, int mtp_layers) {
    const int M = grid.model_stages;
    const int P = grid.ranks;
    std::vector<int> out(static_cast<std::size_t>(M), 0);

    if (!split.layout.empty()) {
        if (split.first_stage_layers >= 0 || split.last_stage_layers >= 0 ||
            split.account_for_embedding || split.account_for_loss)
            fail("pipeline_model_parallel_layout places every layer itself; remove "
                 "decoder_first/last_pipeline_num_layers and account_for_*_in_pipeline_split "
                 "(Megatron-Core ignores them with a layout)",
                 kLayoutKey);
        const std::vector<std::string> stages = parse_layout(split.layout, fail);
        if (static_cast<int>(stages.size()) != M)
            fail("pipeline_model_parallel_layout " + quoted(split.layout) + " has " +
                     std::to_string(stages.size()) + " stages, but the schedule runs " +
                     std::to_string(M) + " (pp " + std::to_string(P) + " x " +
                     std::to_string(M / P) +
                     " chunks); give one '|'-separated stage per "
                     "model stage, in layer order",
                 kLayoutKey);
        int embeddings = 0;
        int losses = 0;
        int decoders = 0;
        for (std::size_t i = 0; i < stages.size(); ++i) {
            for (char ch : stages[i]) {
                embeddings += ch == 'E';
                losses += ch == 'L';
                decoders += ch == 't';
            }
            out[i] = static_cast<int>(std::count(stages[i].begin(), stages[i].end(), 't'));
        }
        const auto mtp_last =
            static_cast<int>(std::count(stages.back().begin(), stages.back().end(), 'm'));
        if (mtp_last != mtp_layers ||
            std::count(split.layout.begin(), split.layout.end(), 'm') > mtp_last)
            fail("pipeline_model_parallel_layout " + quoted(split.layout) + ": the model has " +
                     std::to_string(mtp_layers) +
                     " multi-token-prediction blocks (model.mtp_num_layers); place as many 'm' "
                     "on the last stage, before its L, and none elsewhere",
                 kLayoutKey);
        if (embeddings != 1 || losses != 1 || stages.front().empty() ||
            stages.front().front() != 'E' || stages.back().empty() || stages.back().back() != 'L')
            fail("pipeline_model_parallel_layout " + quoted(split.layout) +
                     ": the embedding E must open the first stage and the loss L close the "
                     "last, once each (Megatron-Core's rule)",
                 kLayoutKey);
        if (decoders != layers)
            fail("pipeline_model_parallel_layout " + quoted(split.layout) + " places " +
                     std::to_string(decoders) + " transformer layers (t), but the model has " +
                     std::to_string(layers),
                 kLayoutKey);
        return out;
    }

    const int chunks = M / P;
    if (split.first_stage_layers >= 0 || split.last_stage_layers >= 0) {
        const char* key = split.first_stage_layers >= 0
                              ? "parallel.decoder_first_pipeline_num_layers"
                              : "parallel.decoder_last_pipeline_num_layers";
        if (split.account_for_embedding || split.account_for_loss)
            fail("decoder_first/last_pipeline_num_layers cannot be combined with "
                 "account_for_embedding/loss_in_pipeline_split (Megatron-Core's rule); "
                 "give one or the other",
                 split.account_for_embedding ? "parallel.account_for_embedding_in_pipeline_split"
                                             : "parallel.account_for_loss_in_pipeline_split");
        if (P < 2)
            fail("decoder_first/last_pipeline_num_layers need a pipeline (pp >= 2)", key);
        int rest = layers;
        int left = P;
        if (split.first_stage_layers >= 0) {
            rest -= split.first_stage_layers;
            --left;
        }
        if (split.last_stage_layers >= 0) {
            rest -= split.last_stage_layers;
            --left;
        }
        if (rest < 0 || (left == 0 && rest != 0))
            fail("decoder_first/last_pipeline_num_layers place " + std::to_string(layers - rest) +
                     " layers on the first/last pipeline rank, "
                     "but the model has " +
                     std::to_string(layers) + (left == 0 ? " and no rank holds the rest" : ""),
                 key);
        if (left > 0 && rest == 0)
            fail("decoder_first/last_pipeline_num_layers place all " + std::to_string(layers) +
                     " layers on the first/last pipeline rank, leaving the other " +
                     std::to_string(left) +
                     " ranks without a layer (empty stages); leave layers for them, or use a "
                     "smaller pp",
                 key);
        if (left > 0 && rest % left != 0)
            fail("with decoder_first/last_pipeline_num_layers the other " + std::to_string(left) +
                     " pipeline ranks must share the remaining " + std::to_string(rest) +
                     " layers evenly (Megatron-Core's rule); choose first/last so that " +
                     std::to_string(left) + " divides what is left",
                 key);
        const int middle = left > 0 ? rest / left : 0;
        for (int r = 0; r < P; ++r) {
            int n = middle;
            if (r == 0 && split.first_stage_layers >= 0)
                n = split.first_stage_layers;
            if (r == P - 1 && split.last_stage_layers >= 0)
                n = split.last_stage_layers;
            if (n % chunks != 0)
                fail("pipeline rank " + std::to_string(r) + " holds " + std::to_string(n) +
                         " layers, not divisible by its " + std::to_string(chunks) +
                         " chunks (Megatron-Core splits a rank's layers evenly over its "
                         "virtual stages); change decoder_first/last_pipeline_num_layers or "
                         "virtual_stages, or give pipeline_model_parallel_layout",
                     r == 0 && split.first_stage_layers >= 0
                         ? "parallel.decoder_first_pipeline_num_layers"
                     : r == P - 1 && split.last_stage_layers >= 0
                         ? "parallel.decoder_last_pipeline_num_layers"
                         : "parallel.virtual_stages");
            for (int c = 0; c < chunks; ++c)
                out[static_cast<std::size_t>(grid.stage_of(c, r))] = n / chunks;
        }
        return out;
    }

    // The embedding and the loss as layers of an even split (account_for_*).
    const int e = split.account_for_embedding ? 1 : 0;
    const int l = split.account_for_loss ? 1 : 0;
    const int total = layers + e + l;
    if (total % M != 0)
        fail("the model's " + std::to_string(layers) + " layers" + (e ? " + the embedding" : "") +
                 (l ? " + the loss" : "") + " = " + std::to_string(total) +
                 " are not divisible by the " + std::to_string(M) + " model stages (pp " +
                 std::to_string(P) + " x " + std::to_string(chunks) +
                 " chunks); choose pp and virtual_stages whose product divides " +
                 std::to_string(total) + ", or give pipeline_model_parallel_layout",
             e ? "parallel.account_for_embedding_in_pipeline_split"
               : "parallel.account_for_loss_in_pipeline_split");
    const int n = total / M;
    std::fill(out.begin(), out.end(), n);
    out.front() -= e;
    out.back() -= l;
    return out;
}

} // namespace clustersim::strategies::parallel
