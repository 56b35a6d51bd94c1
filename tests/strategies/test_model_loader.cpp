#include "base/error.h"
#include "model_test_util.h"
#include "strategies/models/model_loader.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace clustersim;
using namespace clustersim::strategies::models;

namespace {

/// A minimal valid transformer, to which each error section adds one bad field.
const std::string kBase = "kind: transformer\nlayers: 2\nhidden: 64\nheads: 4\nseq: 32\n"
                          "vocab: 1000\n";

} // namespace

TEST_CASE("model presets: every preset loads and says what it is", "[models][presets]") {
    const auto names = config::preset_names(model_presets());
    for (const auto& n : {"lecture-mlp", "gpt3-175B", "megatron-22B", "turing-530B", "megatron-1T",
                          "llama2-7B", "llama2-70B", "llama3-8B", "llama3-70B", "llama3-405B",
                          "mixtral-8x7B", "mixtral-8x22B", "deepseek-v3"})
        CHECK(std::find(names.begin(), names.end(), n) != names.end());
    for (const auto& n : names) {
        INFO(n);
        const ModelSpec m = load_model(n);
        CHECK(m.name == n);
        CHECK(!m.description.empty());
        CHECK(m.layers > 0);
        CHECK(m.hidden > 0);
        CHECK(parameter_counts(m).total > 0);
    }
}

TEST_CASE("model presets: published configurations", "[models][presets]") {
    const ModelSpec mlp = load_model("lecture-mlp");
    CHECK(mlp.kind == ModelKind::mlp);
    CHECK(mlp.layers == 4);
    CHECK(mlp.hidden == 1024);
    CHECK(parameter_counts(mlp).total == 4 * 1024 * 1024);

    const ModelSpec gpt3 = load_model("gpt3-175B");
    CHECK(gpt3.layers == 96);
    CHECK(gpt3.hidden == 12288);
    CHECK(gpt3.heads == 96);
    CHECK(gpt3.kv_heads == 96);
    CHECK(gpt3.ffn == 4 * 12288);
    CHECK(gpt3.seq == 2048);
    CHECK(gpt3.vocab == 51200);
    CHECK(gpt3.head_dim() == 128);
    CHECK(gpt3.attention == AttentionKind::unfused);
    CHECK(gpt3.tied_embeddings);
    CHECK(gpt3.dropout == 0.1);
    // "175B": 12 l h^2 + 13 l h + (V + s) h (+ the final norm).
    CHECK(static_cast<double>(parameter_counts(gpt3).total) == Approx(175e9).epsilon(0.005));

    const ModelSpec l70 = load_model("llama2-70B");
    CHECK(l70.kv_heads == 8);
    CHECK(l70.ffn == 28672);
    CHECK(l70.activation == Activation::swiglu);
    CHECK(l70.norm == Norm::rmsnorm);
    CHECK(l70.position_embedding == PositionEmbedding::rope);
    CHECK_FALSE(l70.tied_embeddings);
    CHECK_FALSE(l70.bias);
    CHECK(l70.dropout == 0);
    CHECK(l70.attention == AttentionKind::flash);
    CHECK(l70.qkv_out() == (64 + 2 * 8) * 128);
    // Exact parameter counts of the released checkpoints (Touvron et al. 2023).
    CHECK(parameter_counts(load_model("llama2-7B")).total == 6'738'415'616);
    CHECK(parameter_counts(l70).total == 68'976'648'192);

    // Llama 3 (Llama Team 2024, Table 3): "8B", "70B", "405B"; Meta's model cards give 8.0B,
    // 70.6B and 405B. Exact counts of the released checkpoints: 32 (2h + h(a + 2g)d + h^2 +
    // 3hf) + 2Vh + h with V = 128256 (untied input and output embeddings).
    struct Published {
        const char* name;
        double total;
        std::int64_t exact;
    };
    for (const Published& p : {Published{"llama3-8B", 8.0e9, 8'030'261'248},
                               Published{"llama3-70B", 70.6e9, 70'553'706'496},
                               Published{"llama3-405B", 405e9, 405'853'388'800}}) {
        INFO(p.name);
        const ModelSpec m = load_model(p.name);
        CHECK(m.kv_heads == 8);
        CHECK(m.vocab == 128256);
        CHECK(m.activation == Activation::swiglu);
        CHECK_FALSE(m.tied_embeddings);
        const ParameterCounts c = parameter_counts(m);
        CHECK(c.total == p.exact);
        CHECK(static_cast<double>(c.total) == Approx(p.total).epsilon(0.01));
        CHECK(c.head == c.embedding);
        CHECK(c.embedding == std::int64_t{128256} * m.hidden);
    }

    CHECK(load_model("megatron-22B").hidden == 6144);
    CHECK(load_model("turing-530B").layers == 105);
    CHECK(load_model("megatron-1T").heads == 160);
}

TEST_CASE("model presets: mixtures of experts, total and active parameters", "[models][moe]") {
    // Published totals and active parameters per token: Mixtral 8x7B 46.7B / 12.9B (Jiang et
    // al. 2024), Mixtral 8x22B 141B / 39B (Mistral AI). Per layer: attention h(a + 2g)d + h^2,
    // the router E h, E experts of 3 h f (top-k of them active), two RMSNorms; untied
    // embeddings 2 V h and the final norm.
    struct Published {
        const char* name;
        double total, active;
        std::int64_t exact;
    };
    for (const Published& p : {Published{"mixtral-8x7B", 46.7e9, 12.9e9, 46'702'792'704},
                               Published{"mixtral-8x22B", 141e9, 39e9, 140'630'071'296}}) {
        INFO(p.name);
        const ModelSpec m = load_model(p.name);
        REQUIRE(m.is_moe());
        CHECK(m.num_experts == 8);
        CHECK(m.moe_router_topk == 2);
        CHECK(m.moe_layers() == m.layers);
        const ParameterCounts c = parameter_counts(m);
        CHECK(c.total == p.exact);
        CHECK(static_cast<double>(c.total) == Approx(p.total).epsilon(0.01));
        CHECK(static_cast<double>(c.active) == Approx(p.active).epsilon(0.01));
        const std::int64_t h = m.hidden, f = m.moe_ffn_hidden_size;
        const std::int64_t attention = h * (m.heads + 2 * m.kv_heads) * m.head_dim() + h * h;
        CHECK(c.per_moe_layer == attention + 8 * h + 8 * 3 * h * f + 2 * h);
        CHECK(c.total - c.active == m.layers * 6 * 3 * h * f); // 6 idle experts per layer
    }
    // DeepSeek-V3: 671B total, 37B activated (DeepSeek-AI 2024). Per layer latent attention
    // h q' + q' + q' a (qk + r) + h (c + r) + c + c a (qk + v) + a v h with q' = 1536, c = 512,
    // qk = 128, r = 64, v = 128, a = 128; 3 dense layers of 3 h 18432; 58 of 256 + 1 experts of
    // 3 h 2048 and a router of 256 h; untied 2 V h.
    const ModelSpec ds = load_model("deepseek-v3");
    REQUIRE(ds.is_mla());
    CHECK(ds.moe_layers() == 58);
    const ParameterCounts c = parameter_counts(ds);
    const std::int64_t h = 7168;
    const std::int64_t mla =
        h * 1536 + 1536 + 1536 * 128 * 192 + h * 576 + 512 + 512 * 128 * 256 + 128 * 128 * h;
    CHECK(c.per_layer == mla + 2 * h + 3 * h * 18432);
    CHECK(c.per_moe_layer == mla + 2 * h + 256 * h + 257 * 3 * h * 2048);
    CHECK(c.total == 671'026'404'352);
    CHECK(static_cast<double>(c.total) == Approx(671e9).epsilon(0.01));
    // "37B activated": 36.6B without the input embedding (a lookup, no FLOPs; with it 37.55B,
    // which would round to 38B). The published figure has two digits, so it is held to its
    // rounding: within half a billion (here 1.0% below).
    const double activated = static_cast<double>(c.active - c.embedding);
    CHECK(std::abs(activated - 37e9) < 0.5e9);
    CHECK(c.active - c.embedding ==
          3 * c.per_layer + 58 * (mla + 2 * h + 256 * h + 9 * 3 * h * 2048) + c.head + h);
    // Mistral AI's active figures count the embedding; held to their rounding likewise.
    CHECK(std::abs(static_cast<double>(parameter_counts(load_model("mixtral-8x7B")).active) -
                   12.9e9) < 0.05e9);
    CHECK(std::abs(static_cast<double>(parameter_counts(load_model("mixtral-8x22B")).active) -
                   39e9) < 0.5e9);

    // A dense model's active parameters are all of them.
    const ParameterCounts dense = parameter_counts(load_model("llama3-8B"));
    CHECK(dense.active == dense.total);
    CHECK(dense.per_moe_layer == 0);
}

TEST_CASE("model files: mixture-of-experts keys and their errors", "[models][moe][errors]") {
    const std::string moe = kBase + "bias: false\nnum_experts: 8\n";
    const ModelSpec m = parse_model_yaml(moe + "moe_router_topk: 2\nmoe_ffn_hidden_size: 32\n"
                                               "moe_shared_expert_intermediate_size: 64\n"
                                               "first_k_dense_replace: 1\n"
                                               "moe_expert_capacity_factor: 1.25\n",
                                         "model.yaml");
    CHECK(m.num_experts == 8);
    CHECK(m.moe_ffn_hidden_size == 32);
    CHECK(m.moe_shared_expert_intermediate_size == 64);
    CHECK(m.first_k_dense_replace == 1);
    CHECK_FALSE(m.is_moe_layer(0));
    CHECK(m.is_moe_layer(1));
    CHECK(m.moe_expert_capacity_factor == 1.25);
    // moe_ffn_hidden_size defaults to ffn (4h).
    CHECK(parse_model_yaml(moe, "model.yaml").moe_ffn_hidden_size == 256);
    CHECK_THAT(load_error(moe + "moe_router_topk: 9\n"),
               Catch::Contains("model.yaml:9:18") && Catch::Contains("'moe_router_topk'") &&
                   Catch::Contains("exceeds num_experts=8") && Catch::Contains("between 1 and 8"));
    CHECK_THAT(load_error(moe + "first_k_dense_replace: 2\n"),
               Catch::Contains("model.yaml:9") && Catch::Contains("'first_k_dense_replace'") &&
                   Catch::Contains("at most 1"));
    CHECK_THAT(load_error(moe + "moe_router_num_groups: 3\nmoe_router_group_topk: 1\n"),
               Catch::Contains("model.yaml:9") && Catch::Contains("'moe_router_num_groups'") &&
                   Catch::Contains("does not divide num_experts=8"));
    CHECK_THAT(load_error(moe + "moe_router_num_groups: 4\nmoe_router_group_topk: 5\n"),
               Catch::Contains("'moe_router_group_topk'") && Catch::Contains("between 1 and"));
    CHECK_THAT(load_error(moe + "moe_router_group_topk: 2\n"),
               Catch::Contains("'moe_router_group_topk'") &&
                   Catch::Contains("needs moe_router_num_groups"));
    CHECK(parse_model_yaml(moe + "moe_router_num_groups: 4\nmoe_router_group_topk: 2\n", "m")
              .moe_router_group_topk == 2);
    // 1 group of 2 experts cannot hold a token's 3 experts.
    CHECK_THAT(load_error(moe + "moe_router_topk: 3\nmoe_router_num_groups: 4\n"
                                "moe_router_group_topk: 1\n"),
               Catch::Contains("'moe_router_topk'") &&
                   Catch::Contains("exceeds the 2 experts of the moe_router_group_topk=1"));
    CHECK_THAT(load_error(moe + "moe_expert_capacity_factor: 0\n"),
               Catch::Contains("model.yaml:9") && Catch::Contains("dropless"));
    CHECK_THAT(load_error(moe + "moe_load_imbalance: 0.5\n"),
               Catch::Contains("model.yaml:9") && Catch::Contains("'moe_load_imbalance'"));
    CHECK_THAT(load_error(kBase + "moe_router_topk: 2\n"),
               Catch::Contains("model.yaml:7") && Catch::Contains("set num_experts"));
    // Linear biases count in the experts and the router too (gpt-oss): 8 experts' fc1 and
    // fc2 biases (4h + h each, GeLU) and the router's 8.
    const ModelSpec biased = parse_model_yaml(kBase + "num_experts: 8\n", "model.yaml");
    ModelSpec unbiased = biased;
    unbiased.bias = false;
    CHECK(moe_layer_parameters_per_rank(biased, 1) - moe_layer_parameters_per_rank(unbiased, 1) ==
          (3 * 64 + 64) + 8 * (4 * 64 + 64) + 8); // qkv and proj biases, experts, router
    // Latent attention.
    const std::string mla = kBase + "attention: flash\nkv_lora_rank: 16\nq_lora_rank: 32\n"
                                    "qk_head_dim: 16\nqk_pos_emb_head_dim: 8\n";
    CHECK(parse_model_yaml(mla + "v_head_dim: 16\n", "model.yaml").is_mla());
    CHECK_THAT(load_error(mla),
               Catch::Contains("model.yaml") && Catch::Contains("needs v_head_dim > 0"));
    CHECK_THAT(load_error(kBase + "q_lora_rank: 32\n"),
               Catch::Contains("model.yaml:7") && Catch::Contains("set kv_lora_rank"));
    CHECK_THAT(load_error(mla + "v_head_dim: 16\nkv_heads: 2\n"),
               Catch::Contains("model.yaml:13") && Catch::Contains("remove kv_heads"));
}

TEST_CASE("parameter counts: Narayanan et al. 2021 Table 1", "[models][params]") {
    // Every row's published size from its (heads, hidden, layers), s = 2048, V = 51200:
    // P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), their Eq. 2, plus the final norm.
    std::ifstream in(CLUSTERSIM_SOURCE_DIR "/data/reference/megatron/narayanan2021-table1.csv");
    REQUIRE(in);
    std::string line;
    int rows = 0;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#' || line.starts_with("params_b"))
            continue;
        std::stringstream ss(line);
        std::string cell;
        std::vector<double> f;
        while (std::getline(ss, cell, ','))
            f.push_back(std::stod(cell));
        ModelSpec m = load_model("gpt3-175B");
        m.heads = m.kv_heads = static_cast<int>(f[1]);
        m.hidden = static_cast<int>(f[2]);
        m.ffn = 4 * m.hidden;
        m.layers = static_cast<int>(f[3]);
        INFO(line);
        const double params = static_cast<double>(parameter_counts(m).total);
        // The table rounds to 0.1B.
        CHECK(std::abs(params / 1e9 - f[0]) <= 0.05);
        const double l = m.layers, h = m.hidden;
        const double eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (51200.0 + 2048) / (12 * l * h));
        CHECK(params - eq2 == Approx(2 * h)); // the final layernorm
        ++rows;
    }
    CHECK(rows == 10);
}

TEST_CASE("model files: inline mappings, presets by name, extends", "[models][loader]") {
    SECTION("an experiment's model: as a preset name") {
        const ModelSpec m = load_model_node(YAML::Load("gpt3-175B"), "exp.yaml");
        CHECK(m.name == "gpt3-175B");
        CHECK(m.layers == 96);
    }
    SECTION("an experiment's model: as a mapping (strategies/parallel/experiment.h)") {
        const YAML::Node n = YAML::Load("{kind: transformer, layers: 96, hidden: 12288, heads: 96, "
                                        "ffn: 49152, seq: 2048, vocab: 51200, attention: unfused}");
        const ModelSpec m = load_model_node(n, "exp.yaml");
        CHECK(m.name == "custom");
        CHECK(parameter_counts(m).total == parameter_counts(load_model("gpt3-175B")).total);
    }
    SECTION("extends a preset and overrides keys") {
        const ModelSpec m = parse_model_yaml("extends: gpt3-175B\nname: gpt3-half\nlayers: 48\n"
                                             "attention: flash\n",
                                             "m.yaml");
        CHECK(m.name == "gpt3-half");
        CHECK(m.layers == 48);
        CHECK(m.hidden == 12288);
        CHECK(m.attention == AttentionKind::flash);
        CHECK(m.description.empty());
    }
    SECTION("defaults follow the sizes they derive from") {
        // ffn defaults to 4 h and kv_heads to heads, also through extends ...
        const ModelSpec m = parse_model_yaml("extends: gpt3-175B\nhidden: 4096\nheads: 32\n", "m");
        CHECK(m.ffn == 4 * 4096);
        CHECK(m.kv_heads == 32);
        // ... but a size given explicitly stays.
        const ModelSpec l = parse_model_yaml("extends: llama2-70B\nhidden: 4096\nheads: 32\n", "m");
        CHECK(l.ffn == 28672);
        CHECK(l.kv_heads == 8);
    }
    SECTION("the lecture's MLP inline") {
        const ModelSpec m = parse_model_yaml("kind: mlp\nlayers: 8\ndim: 2048\n", "m.yaml");
        CHECK(m.kind == ModelKind::mlp);
        CHECK(m.hidden == 2048);
        CHECK(parameter_counts(m).total == 8LL * 2048 * 2048);
    }
}

TEST_CASE("model files: every bad field is a one-line error with file:line:col and key",
          "[models][loader][errors]") {
    CHECK(load_error(kBase) == "(no error)");
    SECTION("unknown key, with the valid keys listed") {
        const auto e = load_error(kBase + "hiden: 128\n");
        CHECK_THAT(e, Catch::Contains("model.yaml:7:1") && Catch::Contains("unknown key 'hiden'") &&
                          Catch::Contains("hidden") && Catch::Contains("kv_heads"));
    }
    SECTION("wrong type: text for an integer") {
        CHECK_THAT(load_error("kind: transformer\nlayers: many\n"),
                   Catch::Contains("model.yaml:2:9") && Catch::Contains("'layers'") &&
                       Catch::Contains("expected an integer, got 'many'"));
    }
    SECTION("wrong type: a mapping for a number") {
        CHECK_THAT(load_error(kBase + "ffn: {a: 1}\n"),
                   Catch::Contains("'ffn'") && Catch::Contains("got a mapping"));
    }
    SECTION("wrong type: text for a boolean") {
        CHECK_THAT(load_error(kBase + "bias: sometimes\n"),
                   Catch::Contains("'bias'") && Catch::Contains("true or false"));
    }
    SECTION("zero and negative sizes") {
        CHECK_THAT(load_error("layers: 0\nhidden: 64\nheads: 4\nseq: 32\nvocab: 10\n"),
                   Catch::Contains("model.yaml:1:9") && Catch::Contains("'layers'") &&
                       Catch::Contains("from 1"));
        CHECK_THAT(load_error("layers: 2\nhidden: 64\nheads: 4\nseq: -4\nvocab: 10\n"),
                   Catch::Contains("model.yaml:4:6") && Catch::Contains("'seq'"));
    }
    SECTION("heads not dividing hidden") {
        CHECK_THAT(load_error("layers: 2\nhidden: 100\nheads: 3\nseq: 32\nvocab: 10\n"),
                   Catch::Contains("model.yaml:3:8") && Catch::Contains("'heads'") &&
                       Catch::Contains("heads=3 does not divide hidden=100"));
    }
    SECTION("heads not dividing hidden, the hidden size coming from a preset") {
        CHECK_THAT(load_error("extends: gpt3-175B\nheads: 7\n"),
                   Catch::Contains("model.yaml:2:8") && Catch::Contains("hidden=12288"));
    }
    SECTION("kv_heads not dividing heads") {
        CHECK_THAT(load_error(kBase + "kv_heads: 3\n"),
                   Catch::Contains("'kv_heads'") && Catch::Contains("must divide heads=4"));
    }
    SECTION("more kv_heads than heads") {
        CHECK_THAT(load_error(kBase + "kv_heads: 8\n"), Catch::Contains("'kv_heads'"));
    }
    SECTION("a missing key in a file that extends nothing") {
        CHECK_THAT(load_error("layers: 2\nhidden: 64\nheads: 4\nseq: 32\n"),
                   Catch::Contains("model.yaml:1:1") && Catch::Contains("missing key 'vocab'"));
    }
    SECTION("a choice outside its set") {
        CHECK_THAT(load_error(kBase + "attention: fused\n"),
                   Catch::Contains("'attention'") && Catch::Contains("unfused, flash"));
        CHECK_THAT(load_error(kBase + "activation: relu\n"),
                   Catch::Contains("'activation'") && Catch::Contains("gelu, swiglu"));
        CHECK_THAT(load_error(kBase + "norm: batchnorm\n"), Catch::Contains("'norm'"));
        CHECK_THAT(load_error(kBase + "position_embedding: alibi\n"),
                   Catch::Contains("'position_embedding'"));
        CHECK_THAT(load_error("kind: cnn\nlayers: 2\n"),
                   Catch::Contains("'kind'") && Catch::Contains("mlp, transformer"));
    }
    SECTION("dropout outside [0, 1)") {
        CHECK_THAT(load_error(kBase + "dropout: 1\n"),
                   Catch::Contains("'dropout'") && Catch::Contains("[0, 1)"));
        CHECK_THAT(load_error(kBase + "dropout: -0.1\n"), Catch::Contains("'dropout'"));
    }
    SECTION("transformer keys on an MLP") {
        CHECK_THAT(load_error("kind: mlp\nlayers: 4\ndim: 1024\nheads: 8\n"),
                   Catch::Contains("model.yaml:4:1") && Catch::Contains("unknown key 'heads'") &&
                       Catch::Contains("dim"));
    }
    SECTION("an MLP without its dim") {
        CHECK_THAT(load_error("kind: mlp\nlayers: 4\n"), Catch::Contains("missing key 'dim'"));
    }
    SECTION("a preset that does not exist") {
        CHECK_THAT(load_error("extends: gpt5\n"),
                   Catch::Contains("model.yaml:1:10") &&
                       Catch::Contains("unknown model preset 'gpt5'") &&
                       Catch::Contains("gpt3-175B"));
        CHECK_THROWS_WITH(load_model("gpt5"),
                          Catch::Contains("presets: ") && Catch::Contains("llama2-70B"));
        CHECK_THROWS_WITH(load_model_node(YAML::Load("gpt5"), "exp.yaml"),
                          Catch::Contains("unknown model preset"));
    }
    SECTION("a file that does not exist") {
        CHECK_THROWS_WITH(load_model("/nonexistent/model.yaml"),
                          Catch::Contains("no such model file"));
    }
    SECTION("invalid YAML and a document that is not a mapping") {
        CHECK_THAT(load_error("layers: [1\n"),
                   Catch::Contains("model.yaml:") && Catch::Contains("invalid YAML"));
        CHECK_THAT(load_error("- 1\n- 2\n"), Catch::Contains("expected a mapping"));
        CHECK_THROWS_WITH(load_model_node(YAML::Load("[1, 2]"), "exp.yaml"),
                          Catch::Contains("exp.yaml") && Catch::Contains("expected a mapping"));
    }
    SECTION("extends itself") {
        const clustersim::test::TempDir dir("model-loop");
        const auto loop = dir.write("loop.yaml", "extends: loop.yaml\n");
        CHECK_THROWS_WITH(load_model(loop.string()), Catch::Contains("extends"));
    }
}
