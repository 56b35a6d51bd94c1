#include "strategies/models/model_loader.h"

#include "base/error.h"
#include "config/preset.h"
#include "config/yaml_map.h"
#include "strategies/models/model_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>

namespace clustersim::strategies::models {
namespace fs = std::filesystem;
using config::YamlMap;

namespace {

/// A model being layered, with whether the defaulted sizes were given explicitly: when an
/// override changes `hidden` or `heads`, an inherited default (4h, heads) follows it.
struct Layered {
    ModelSpec spec;
    bool ffn_given = false;
    bool kv_heads_given = false;
    bool moe_ffn_given = false;
};

/// The keys a loader reads by hand (model_keys() has no target for them): the range and
/// message of a probability and of a capacity factor.
/// Entries a moe_layer_freq list may expand to (an expression such as [1]*N could ask for
/// any number): far above any model's layers.
constexpr std::size_t kMaxPatternLayers = 1 << 16;

/// Megatron-Core's list form of --moe-layer-freq as a string (its argparse evaluates a Python
/// expression): sums of bracketed lists of 0/1 and parenthesised sums, each optionally
/// repeated ("([0]+[1])*24", "[1]*3+[0]"). Returns the expanded list; throws InputError via
/// `fail` with what it expected.
class PatternParser {
public:
    PatternParser(std::string_view text, std::function<void(const std::string&)> fail)
        : s_(text)
        , fail_(std::move(fail)) {}
    std::vector<std::uint8_t> parse() {
        auto out = sum();
        skip();
        if (i_ != s_.size())
            fail_("unexpected '" + std::string(s_.substr(i_, 1)) + "' at character " +
                  std::to_string(i_ + 1));
        return out;
    }

private:
    void skip() {
        while (i_ < s_.size() && s_[i_] == ' ')
            ++i_;
    }
    bool eat(char c) {
        skip();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    std::int64_t number() {
        skip();
        std::int64_t v = 0;
        const std::size_t start = i_;
        while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9' &&
               v <= static_cast<std::int64_t>(kMaxPatternLayers))
            v = v * 10 + (s_[i_++] - '0');
        if (i_ == start)
            fail_("expected a number at character " + std::to_string(i_ + 1));
        return v;
    }
    std::vector<std::uint8_t> sum() {
        auto out = term();
        while (eat('+')) {
            const auto more = term();
            out.insert(out.end(), more.begin(), more.end());
            check(out.size());
        }
        return out;
    }
    std::vector<std::uint8_t> term() {
        std::vector<std::uint8_t> unit;
        if (eat('(')) {
            unit = sum();
            if (!eat(')'))
                fail_("expected ')' at character " + std::to_string(i_ + 1));
        } else if (eat('[')) {
            do {
                const std::int64_t v = number();
                if (v > 1)
                    fail_("expected 0 (a dense layer) or 1 (experts), got " + std::to_string(v));
                unit.push_back(static_cast<std::uint8_t>(v));
            } while (eat(','));
            if (!eat(']'))
                fail_("expected ']' at character " + std::to_string(i_ + 1));
        } else {
            fail_("expected '[' or '(' at character " + std::to_string(i_ + 1));
        }
        if (!eat('*'))
            return unit;
        const std::int64_t times = number();
        check(unit.size() * static_cast<std::size_t>(times));
        std::vector<std::uint8_t> out;
        for (std::int64_t t = 0; t < times; ++t)
            out.insert(out.end(), unit.begin(), unit.end());
        return out;
    }
    void check(std::size_t n) const {
        if (n > kMaxPatternLayers)
            fail_("the list would hold more than " + std::to_string(kMaxPatternLayers) + " layers");
    }

    std::string_view s_;
    std::size_t i_ = 0;
    std::function<void(const std::string&)> fail_;
};

/// moe_layer_freq: an integer k (experts where i % k == 0), a YAML list of 0/1, or Megatron's
/// expression of one (PatternParser); a list has one entry per layer.
void read_moe_layer_freq(YamlMap& m, ModelSpec& s) {
    const YAML::Node node = m.raw("moe_layer_freq");
    auto fail = [&](const std::string& what) {
        m.fail("moe_layer_freq", what + " (expected an integer >= 1, a list of 0/1 per layer, "
                                        "or an expression such as ([0]+[1])*24)");
    };
    std::vector<std::uint8_t> list;
    if (node.IsSequence()) {
        for (const auto& item : node) {
            const std::string v = item.IsScalar() ? item.Scalar() : "";
            if (v != "0" && v != "1")
                fail("a list entry is '" + v + "', not 0 or 1");
            list.push_back(v == "1" ? 1 : 0);
            if (list.size() > kMaxPatternLayers)
                fail("the list holds more than " + std::to_string(kMaxPatternLayers) + " layers");
        }
    } else {
        const std::string text = m.str("moe_layer_freq");
        if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
            const std::int64_t k = m.integer("moe_layer_freq", 1, kMaxPatternLayers);
            s.moe_layer_pattern.assign(static_cast<std::size_t>(k), 0);
            s.moe_layer_pattern[0] = 1;
            return;
        }
        list = PatternParser(text, fail).parse();
    }
    if (std::find(list.begin(), list.end(), 1) == list.end())
        fail("the list has no layer with experts");
    if (s.layers > 0 && list.size() != static_cast<std::size_t>(s.layers))
        fail("the list has " + std::to_string(list.size()) +
             " entries for layers=" + std::to_string(s.layers) + "; give one per layer");
    s.moe_layer_pattern = std::move(list);
}

void read_by_hand(YamlMap& m, const config::KeyInfo& k, ModelSpec& s) {
    if (!m.has(k.name))
        return;
    if (k.name == "moe_layer_freq") {
        read_moe_layer_freq(m, s);
    } else if (k.name == "dropout") {
        const double p = m.number("dropout", 0);
        if (!(p < 1))
            m.fail("dropout", "expected a probability in [0, 1), got " + m.str("dropout"));
        s.dropout = p;
    } else if (k.name == "yarn_rotary_scaling_factor") {
        const double f = m.number("yarn_rotary_scaling_factor", 0);
        if (f != 0 && !(f >= 1))
            m.fail("yarn_rotary_scaling_factor",
                   "expected YaRN's scaling factor, 1 or more (GPT-OSS: 32), got " +
                       m.str("yarn_rotary_scaling_factor") + "; leave it out for plain RoPE");
        s.yarn_rotary_scaling_factor = f;
    } else if (k.name == "activation_func_clamp_value") {
        s.activation_func_clamp_value = m.number("activation_func_clamp_value", 0);
    } else if (k.name == "moe_expert_capacity_factor") {
        const double c = m.number("moe_expert_capacity_factor", 0);
        if (!(c > 0))
            m.fail("moe_expert_capacity_factor",
                   "expected a positive multiple of the mean tokens per expert (e.g. 1.25), got " +
                       m.str("moe_expert_capacity_factor") + "; leave it out for dropless routing");
        s.moe_expert_capacity_factor = c;
    }
}

/// Reads the keys of model_keys() that apply to the model's kind (read first), in the table's
/// order; defaults that follow other keys (kv_heads = heads, ffn = 4h) follow them here.
void read_keys(YamlMap& m, Layered& l) {
    ModelSpec& s = l.spec;
    for (const auto& k : model_keys()) {
        if (!applies(k.info, s))
            continue;
        config::read_key(m, k, s);
        read_by_hand(m, k.info, s);
    }
    if (!s.is_transformer())
        return;
    l.kv_heads_given = l.kv_heads_given || m.has("kv_heads");
    l.ffn_given = l.ffn_given || m.has("ffn");
    l.moe_ffn_given = l.moe_ffn_given || m.has("moe_ffn_hidden_size");
    if (!l.kv_heads_given)
        s.kv_heads = s.heads;
    if (!l.ffn_given)
        s.ffn = 4 * s.hidden;
    if (!l.moe_ffn_given)
        s.moe_ffn_hidden_size = s.ffn;
}

/// The keys of a group of model_keys() but its switch (the key that turns the group on).
std::vector<std::string> group_keys(std::string_view group, std::string_view switch_key) {
    std::vector<std::string> out;
    for (const auto& k : model_keys()) {
        if (k.info.group == group && k.info.name != switch_key)
            out.emplace_back(k.info.name);
    }
    return out;
}

/// Checks the finished layer; errors point at the key in this file when it names it.
void validate(YamlMap& m, const ModelSpec& s) {
    auto require = [&](bool ok, std::string_view key, const std::string& what) {
        if (ok)
            return;
        if (m.node()[std::string(key)].IsDefined())
            m.fail(key, what);
        throw InputError(config::location(m.file(), m.node().Mark()),
                         "model '" + s.name + "': " + what +
                             (m.path().empty() ? "" : " (in " + m.path() + ")"));
    };
    auto present = [&](int v, std::string_view key) {
        require(v > 0, key, "missing key '" + std::string(key) + "'");
    };
    present(s.layers, "layers");
    if (!s.is_transformer()) {
        present(s.hidden, "dim");
        return;
    }
    present(s.hidden, "hidden");
    present(s.heads, "heads");
    present(s.seq, "seq");
    present(s.vocab, "vocab");
    require(s.kv_channels > 0 || s.hidden % s.heads == 0, "heads",
            "heads=" + std::to_string(s.heads) +
                " does not divide hidden=" + std::to_string(s.hidden) +
                " (each head gets hidden/heads dimensions unless kv_channels says how many)");
    require(s.yarn_rotary_scaling_factor == 0 || s.position_embedding == PositionEmbedding::rope,
            "yarn_rotary_scaling_factor",
            "YaRN extends rotary embeddings; set position_embedding: rope or remove it");
    require(s.window_size > 0 || s.window_attn_skip_freq == 0, "window_attn_skip_freq",
            "window_attn_skip_freq applies to sliding-window attention; set window_size (the "
            "earlier tokens a query sees) or remove it");
    require(s.window_size == 0 || s.attention == AttentionKind::flash, "window_size",
            "sliding-window attention is modelled with FlashAttention; set attention: flash");
    require(s.kv_heads <= s.heads && s.heads % s.kv_heads == 0, "kv_heads",
            "kv_heads=" + std::to_string(s.kv_heads) + " must divide heads=" +
                std::to_string(s.heads) + " (query heads are grouped over the key/value heads)");
    require(s.head == ModelHead::classification || !m.node()["num_labels"].IsDefined(),
            "num_labels",
            "num_labels applies to a classification head; set head: classification or remove "
            "it");
    require(s.head == ModelHead::lm || s.mtp_num_layers == 0, "mtp_num_layers",
            "multi-token prediction needs the LM head; a classification model has none: set "
            "head: lm or remove mtp_num_layers");
    // A classification head has no output layer to share the word embeddings with: untied
    // (read_layer), so nothing counts a vocabulary-sized head gradient or the tied weights'
    // all-reduce.
    require(s.head == ModelHead::lm || !s.tied_embeddings ||
                !m.node()["tied_embeddings"].IsDefined(),
            "tied_embeddings",
            "a classification head has no output layer to tie the embeddings to; remove "
            "tied_embeddings or set it false");
    if (s.kv_lora_rank == 0) {
        for (const std::string& key : group_keys("mla", "kv_lora_rank"))
            require(!m.node()[key].IsDefined() || m.node()[key].Scalar() == "0", key,
                    key + " applies to multi-head latent attention; set kv_lora_rank (the "
                          "key/value latent) or remove it");
    } else {
        auto positive = [&](int v, const char* key) {
            require(v > 0, key,
                    std::string("latent attention (kv_lora_rank > 0) needs ") + key +
                        " > 0; DeepSeek-V3 has qk_head_dim 128, qk_pos_emb_head_dim 64, "
                        "v_head_dim 128");
        };
        // q_lora_rank 0: no query latent, the queries projected from the hidden state
        // (Megatron-Core's linear_q_proj when q_lora_rank is None: DeepSeek-V2-Lite, Moonlight).
        positive(s.qk_head_dim, "qk_head_dim");
        positive(s.qk_pos_emb_head_dim, "qk_pos_emb_head_dim");
        positive(s.v_head_dim, "v_head_dim");
        require(s.attention == AttentionKind::flash, "attention",
                "latent attention is modelled with FlashAttention; set attention: flash");
        require(s.kv_heads == s.heads, "kv_heads",
                "latent attention has no key/value groups: every head projects its own keys "
                "and values from the latent; remove kv_heads");
    }
    if (s.num_experts == 0) {
        for (const std::string& key : group_keys("moe", "num_experts"))
            require(!m.node()[key].IsDefined(), key,
                    key + " applies to a mixture of experts; set num_experts (the routed experts "
                          "per layer) or remove it");
        return;
    }
    require(s.moe_router_topk <= s.num_experts, "moe_router_topk",
            "moe_router_topk=" + std::to_string(s.moe_router_topk) + " exceeds num_experts=" +
                std::to_string(s.num_experts) + "; a token is routed to at most every expert: " +
                "choose moe_router_topk between 1 and " + std::to_string(s.num_experts));
    // The busiest GPU receives at most every token's copy for each of its experts: with one
    // expert per GPU, num_experts / topk times the mean. More is no load, it is an
    // impossible one (1e12 printed an MFU of 821%).
    const double most = static_cast<double>(s.num_experts) / s.moe_router_topk;
    require(s.moe_load_imbalance <= most, "moe_load_imbalance",
            fmt::format("moe_load_imbalance={} is more than num_experts / moe_router_topk = {:g}, "
                        "the most one GPU can receive (every token routed to its experts)",
                        s.moe_load_imbalance, most));
    if (s.moe_router_num_groups > 0) {
        require(s.num_experts % s.moe_router_num_groups == 0, "moe_router_num_groups",
                "moe_router_num_groups=" + std::to_string(s.moe_router_num_groups) +
                    " does not divide num_experts=" + std::to_string(s.num_experts) +
                    "; the experts split into equal groups");
        require(s.moe_router_group_topk >= 1 && s.moe_router_group_topk <= s.moe_router_num_groups,
                "moe_router_group_topk",
                "group-limited routing needs moe_router_group_topk between 1 and "
                "moe_router_num_groups=" +
                    std::to_string(s.moe_router_num_groups) + ", got " +
                    std::to_string(s.moe_router_group_topk));
        const std::int64_t reachable = static_cast<std::int64_t>(s.moe_router_group_topk) *
                                       (s.num_experts / s.moe_router_num_groups);
        require(s.moe_router_topk <= reachable, "moe_router_topk",
                "moe_router_topk=" + std::to_string(s.moe_router_topk) + " exceeds the " +
                    std::to_string(reachable) + " experts of the moe_router_group_topk=" +
                    std::to_string(s.moe_router_group_topk) +
                    " groups a token may use; choose "
                    "at most " +
                    std::to_string(reachable) + " or raise moe_router_group_topk");
    } else {
        require(s.moe_router_group_topk == 0, "moe_router_group_topk",
                "moe_router_group_topk needs moe_router_num_groups (the groups it picks from); "
                "set both or neither");
    }
    require(s.first_k_dense_replace < s.layers, "first_k_dense_replace",
            "first_k_dense_replace=" + std::to_string(s.first_k_dense_replace) +
                " leaves no layer with experts among layers=" + std::to_string(s.layers) +
                "; choose at most " + std::to_string(s.layers - 1) +
                " dense layers, or num_experts: 0 for a dense model");
}

/// Reads one layer of a model file over what the layers below it gave.
void read_layer(YamlMap& root, Layered& l, bool extended) {
    if (extended)
        l.spec.description.clear();
    else
        l.spec.name = fs::path(root.file()).stem().string();
    read_keys(root, l);
    root.finish();
    validate(root, l.spec);
    if (l.spec.head == ModelHead::classification)
        l.spec.tied_embeddings = false;
}

Layered load_layers(const YAML::Node& doc, const std::string& file) {
    return config::load_layered<Layered>(model_presets(), doc, file, read_layer);
}

Layered load_file(const fs::path& path) {
    return config::load_layered_file<Layered>(model_presets(), path, read_layer);
}

} // namespace

const config::PresetKind& model_presets() {
    static const config::PresetKind kind{
        "models", "model", "or give a path to a YAML file, or the model as a mapping"};
    return kind;
}

ModelSpec load_model(const std::string& name_or_path) {
    return load_file(config::resolve_preset(model_presets(), name_or_path)).spec;
}

ModelSpec load_model_node(const YAML::Node& node, const std::string& file) {
    if (node.IsScalar())
        return load_file(config::resolve_preset(model_presets(), node.Scalar(),
                                                fs::path(file).parent_path()))
            .spec;
    Layered l = load_layers(node, file);
    // An inline model without a name or a base is not named after the experiment file.
    if (node.IsMap() && !node["name"] && !node["extends"])
        l.spec.name = "custom";
    return l.spec;
}

ModelSpec parse_model_yaml(const std::string& text, const std::string& file) {
    const YAML::Node doc = config::parse_yaml(text, file);
    return load_layers(doc, file).spec;
}

} // namespace clustersim::strategies::models
