#include "base/error.h"
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

std::string load_error(const std::string& text) {
    try {
        (void)parse_model_yaml(text, "model.yaml");
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

/// A minimal valid transformer, to which each error section adds one bad field.
const std::string kBase = "kind: transformer\nlayers: 2\nhidden: 64\nheads: 4\nseq: 32\n"
                          "vocab: 1000\n";

} // namespace

TEST_CASE("model presets: every preset loads and says what it is", "[models][presets]") {
    const auto names = config::preset_names(model_presets());
    for (const auto& n : {"lecture-mlp", "gpt3-175B", "megatron-22B", "turing-530B", "megatron-1T",
                          "llama2-7B", "llama2-70B"})
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

    CHECK(load_model("megatron-22B").hidden == 6144);
    CHECK(load_model("turing-530B").layers == 105);
    CHECK(load_model("megatron-1T").heads == 160);
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
