#include "base/error.h"
#include "calibrate/measurements.h"

#include "calibrate/predict.h"

#include "hardware/hardware_loader.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

using namespace clustersim;
using namespace clustersim::calibrate;
using hardware::Dtype;
using sim::Time;

namespace {

/// One point of every kind, with every optional field used somewhere.
MeasurementFile sample() {
    MeasurementFile f;
    f.environment.device = "NVIDIA H100 80GB HBM3";
    f.environment.device_count = 8;
    f.environment.driver_version = "550.54.15";
    f.environment.cuda_version = "runtime 13.0, driver API 13.0";
    f.environment.nccl_version = "2.28.9";
    f.environment.cublas_version = "13.0.0";
    f.environment.date = "2025-01-31T12:00:00Z";
    f.environment.host = "node-01";
    f.environment.tool = "clustersim calibrate run";

    CollectiveMeasurement c;
    c.op = CollectiveOp::all_reduce;
    c.gpus = 8;
    c.bytes = 1048576;
    c.dtype = Dtype::fp32;
    c.in_place = false;
    c.time = Time::ns(52'610);
    c.wrong = 0;
    c.source = "log.txt:22";
    f.collectives.push_back(c);
    c.in_place = true;
    c.algorithm = "ring";
    c.wrong.reset();
    c.source.clear();
    c.time = Time::ps(53'030'001);
    f.collectives.push_back(c);
    CollectiveMeasurement a2a;
    a2a.op = CollectiveOp::all_to_all;
    a2a.gpus = 4;
    a2a.bytes = 4096;
    a2a.dtype = Dtype::bf16;
    a2a.time = Time::us(20);
    f.collectives.push_back(a2a);

    GemmMeasurement g;
    g.m = 8192;
    g.n = 8192;
    g.k = 8192;
    g.dtype = Dtype::bf16;
    g.time = Time::us(1400);
    f.gemms.push_back(g);
    g.dtype = Dtype::fp8;
    g.m = 16;
    g.layout = "NN";
    g.time = Time::ns(40'123);
    f.gemms.push_back(g);

    CopyMeasurement cp;
    cp.kind = CopyKind::device_to_device;
    cp.method = CopyMethod::kernel;
    cp.bytes = std::int64_t{1} << 30;
    cp.time = Time::us(400);
    f.copies.push_back(cp);
    cp.kind = CopyKind::peer;
    cp.method = CopyMethod::memcpy;
    cp.dst_gpu = 3;
    cp.time = Time::us(3000);
    f.copies.push_back(cp);
    cp.kind = CopyKind::host_to_device;
    cp.dst_gpu = 0;
    cp.time = Time::ms(45);
    f.copies.push_back(cp);

    P2pMeasurement p;
    p.src_gpu = 0;
    p.dst_gpu = 1;
    p.bytes = 268435456;
    p.time = Time::us(900);
    f.p2p.push_back(p);

    f.launches.push_back({LaunchMethod::host_submit, Time::ns(2'100), 256, ""});
    f.launches.push_back({LaunchMethod::gpu_back_to_back, Time::ns(1'300), 256, ""});
    f.launches.push_back({LaunchMethod::launch_and_sync, Time::ns(8'500), 1, ""});

    StepMeasurement s;
    s.gpus = 8;
    s.model = {{"kind", std::string("transformer")}, {"layers", std::int64_t{24}},
               {"hidden", std::int64_t{1024}},       {"heads", std::int64_t{16}},
               {"seq", std::int64_t{1024}},          {"vocab", std::int64_t{50257}}};
    s.training = {{"global_batch", std::int64_t{32}},
                  {"micro_batch", std::int64_t{4}},
                  {"dtype", std::string("fp16")}};
    s.parallel = {{"tp", std::int64_t{2}},      {"pp", std::int64_t{2}},
                  {"dp", std::int64_t{2}},      {"recompute", std::string("full")},
                  {"sequence_parallel", false}, {"dp_bucket", std::string("25MiB")}};
    s.time = Time::ps(219'732'754'000);
    s.source = "steps.csv:3";
    f.steps.push_back(s);
    StepMeasurement preset;
    preset.gpus = 1;
    preset.model_preset = "lecture-mlp";
    preset.time = Time::us(1500);
    f.steps.push_back(preset);
    return f;
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
    const auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    return text.replace(pos, from.size(), to);
}

/// A minimal valid file with one collective; tests edit its text.
const std::string kMinimal = R"({
  "format": "clustersim-measurements",
  "version": 1,
  "environment": {"device": "NVIDIA A100-SXM4-80GB", "device_count": 8},
  "collectives": [
    {"op": "all_reduce", "gpus": 8, "bytes": 1048576, "dtype": "fp32", "in_place": false, "time_us": 52.61}
  ]
})";

std::string error_of(const std::string& text) {
    try {
        parse_measurements(text, "M.json");
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

TEST_CASE("measurements: every kind round-trips through JSON, byte for byte",
          "[calibrate][measurements]") {
    const MeasurementFile f = sample();
    const std::string text = format_measurements(f);
    const MeasurementFile back = parse_measurements(text, "M.json");
    CHECK(back == f);
    CHECK(format_measurements(back) == text);
    CHECK(format_measurements(sample()) == text); // deterministic
    CHECK(back.size() == 14);
}

TEST_CASE("measurements: the written form is fixed", "[calibrate][measurements]") {
    const std::string text = format_measurements(sample());
    CHECK_THAT(text, Catch::StartsWith("{\n  \"format\": \"clustersim-measurements\",\n  "
                                       "\"version\": 1,\n  \"environment\": {\n    \"device\": "
                                       "\"NVIDIA H100 80GB HBM3\",\n"));
    // One point per line, keys in a fixed order, rates derived and rounded to 6 digits.
    CHECK_THAT(text,
               Catch::Contains(R"({"op":"all_reduce","gpus":8,"bytes":1048576,"dtype":"fp32",)"
                               R"("in_place":false,"time_us":52.61,"algbw_gbps":19.9311,)"
                               R"("busbw_gbps":34.8795,"wrong":0,"source":"log.txt:22"})"));
    CHECK_THAT(text, Catch::Contains(R"("time_us":53.030001)"));
    CHECK_THAT(text, Catch::Contains(R"({"m":8192,"n":8192,"k":8192,"dtype":"bf16","layout":"TN",)"
                                     R"("library":"cublaslt","time_us":1400.0,"tflops":785.365})"));
    CHECK_THAT(text,
               Catch::Contains(R"("kind":"peer","method":"memcpy","bytes":1073741824,)"
                               R"("src_gpu":0,"dst_gpu":3,"time_us":3000.0,"gbps":357.914})"));
    CHECK_THAT(text, Catch::Contains(R"({"gpus":1,"model":"lecture-mlp","training":{},)"
                                     R"("parallel":{},"time_ms":1.5})"));
    CHECK_THAT(text, Catch::Contains(R"("time_ms":219.732754)"));
    CHECK_THAT(text, Catch::EndsWith("\n  ]\n}\n"));
}

TEST_CASE("measurements: derived rates follow nccl-tests' conventions",
          "[calibrate][measurements]") {
    // The first row of the 8x A100 nccl-tests log: 1 MiB in 52.61 us.
    CollectiveMeasurement c;
    c.gpus = 8;
    c.bytes = 1048576;
    c.time = Time::ns(52'610);
    CHECK(c.algbw() / 1e9 == Approx(19.93).epsilon(1e-3));
    CHECK(c.busbw() / 1e9 == Approx(34.88).epsilon(1e-3));
    GemmMeasurement g;
    g.m = g.n = g.k = 4096;
    g.time = Time::ms(1);
    CHECK(g.flop_rate() == Approx(2.0 * 4096 * 4096 * 4096 / 1e-3));
}

TEST_CASE("measurements: step settings use the experiment file's keys",
          "[calibrate][measurements]") {
    StepMeasurement s;
    apply_setting(s, "model.vocab=50257", "--set");
    apply_setting(s, "parallel.recompute=full", "--set");
    apply_setting(s, "parallel.sequence_parallel=true", "--set");
    apply_setting(s, "training.dtype=fp16", "--set");
    CHECK(std::get<std::int64_t>(s.model.at("vocab")) == 50257);
    CHECK(std::get<std::string>(s.parallel.at("recompute")) == "full");
    CHECK(std::get<bool>(s.parallel.at("sequence_parallel")));
    s.model_preset = "gpt3-175B";
    CHECK(s.overrides() ==
          std::vector<std::string>{"model=gpt3-175B", "model.vocab=50257", "training.dtype=fp16",
                                   "parallel.recompute=full", "parallel.sequence_parallel=true"});
    SECTION("every key run takes, from the same tables (they once drifted apart)") {
        apply_setting(s, "parallel.cp=2", "--set");
        apply_setting(s, "parallel.schedule=zb-h1", "--set");
        apply_setting(s, "model.activation=swiglu", "--set");
        apply_setting(s, "model.moe_router_group_topk=4", "--set");
        apply_setting(s, "model.dropout=0.0", "--set");
        CHECK(std::get<std::int64_t>(s.parallel.at("cp")) == 2);
        CHECK(std::get<std::string>(s.parallel.at("schedule")) == "zb-h1");
        CHECK(std::get<std::string>(s.model.at("activation")) == "swiglu");
        CHECK(std::get<double>(s.model.at("dropout")) == 0.0);
        CHECK_THROWS_WITH(apply_setting(s, "parallel.cp=0", "--set"),
                          Catch::Contains("expected an integer from 1 to 65536, got 0"));
        CHECK_THROWS_WITH(apply_setting(s, "model.dropout=x", "--set"),
                          Catch::Contains("model.dropout: expected a number, got 'x'"));
    }
    SECTION("unknown key") {
        CHECK_THROWS_WITH(apply_setting(s, "model.vocabulary=5", "--set"),
                          Catch::Contains("unknown model key 'vocabulary'") &&
                              Catch::Contains("vocab"));
    }
    SECTION("unknown section") {
        CHECK_THROWS_WITH(apply_setting(s, "optim.lr=1", "--set"),
                          Catch::Contains("unknown section 'optim'"));
    }
    SECTION("not an integer") {
        CHECK_THROWS_WITH(apply_setting(s, "parallel.tp=two", "--set"),
                          Catch::Contains("parallel.tp: expected an integer, got 'two'"));
    }
    SECTION("bad choice") {
        CHECK_THROWS_WITH(apply_setting(s, "parallel.recompute=most", "--set"),
                          Catch::Contains("expected one of none, selective, full, auto"));
    }
    SECTION("no equals sign") {
        CHECK_THROWS_WITH(apply_setting(s, "model.vocab", "--set"),
                          Catch::Contains("expected SECTION.KEY=VALUE"));
    }
    SECTION("zero stage out of range") {
        CHECK_THROWS_WITH(apply_setting(s, "parallel.zero=4", "--set"),
                          Catch::Contains("from 0 to 3"));
    }
}

TEST_CASE("measurements: strict reading names the file and the JSON path",
          "[calibrate][measurements][errors]") {
    REQUIRE(parse_measurements(kMinimal, "M.json").collectives.size() == 1);
    SECTION("not JSON") {
        CHECK_THAT(error_of("{\n  \"format\": \n}"),
                   Catch::StartsWith("M.json: not valid JSON: parse error at line 3, column 1"));
    }
    SECTION("not a measurement file") {
        CHECK_THAT(error_of(replace(kMinimal, "clustersim-measurements", "something-else")),
                   Catch::Contains("M.json: format: expected \"clustersim-measurements\""));
    }
    SECTION("unsupported version") {
        CHECK_THAT(error_of(replace(kMinimal, "\"version\": 1", "\"version\": 2")),
                   Catch::Contains("M.json: version: version 2 is not supported"));
    }
    SECTION("missing environment") {
        CHECK_THAT(error_of(R"({"format": "clustersim-measurements", "version": 1})"),
                   Catch::Contains("M.json: (top): missing key 'environment'"));
    }
    SECTION("wrong type") {
        CHECK_THAT(error_of(replace(kMinimal, "\"bytes\": 1048576", "\"bytes\": \"1MiB\"")),
                   Catch::Contains("M.json: collectives[0].bytes: expected an integer, got "
                                   "\"1MiB\""));
    }
    SECTION("fractional integer") {
        CHECK_THAT(error_of(replace(kMinimal, "\"gpus\": 8,", "\"gpus\": 8.5,")),
                   Catch::Contains("collectives[0].gpus: expected an integer, got 8.5"));
    }
    SECTION("negative time") {
        CHECK_THAT(error_of(replace(kMinimal, "52.61", "-52.61")),
                   Catch::Contains("collectives[0].time_us: expected a positive number, got "
                                   "-52.61"));
    }
    SECTION("zero time") {
        CHECK_THAT(error_of(replace(kMinimal, "52.61", "0")),
                   Catch::Contains("collectives[0].time_us: expected a positive number, got 0"));
    }
    SECTION("zero size") {
        CHECK_THAT(error_of(replace(kMinimal, "1048576", "0")),
                   Catch::Contains("collectives[0].bytes: expected an integer from 1"));
    }
    SECTION("unknown op") {
        CHECK_THAT(error_of(replace(kMinimal, "\"all_reduce\"", "\"all_reduse\"")),
                   Catch::Contains("collectives[0].op: unknown collective 'all_reduse' (valid: "
                                   "broadcast, reduce, all_reduce"));
    }
    SECTION("unknown dtype") {
        CHECK_THAT(error_of(replace(kMinimal, "\"fp32\"", "\"float\"")),
                   Catch::Contains("collectives[0].dtype: expected one of fp64, fp32"));
    }
    SECTION("unknown algorithm") {
        CHECK_THAT(error_of(replace(kMinimal, "\"op\": \"all_reduce\",",
                                    "\"op\": \"all_reduce\", \"algorithm\": \"butterfly\",")),
                   Catch::Contains("collectives[0].algorithm: unknown algorithm 'butterfly'"));
    }
    SECTION("unknown key") {
        CHECK_THAT(error_of(replace(kMinimal, "\"time_us\"", "\"time_ms\"")),
                   Catch::Contains("M.json: collectives[0]: missing key 'time_us'"));
        CHECK_THAT(error_of(replace(kMinimal, "\"time_us\": 52.61",
                                    "\"time_us\": 52.61, "
                                    "\"colour\": \"red\"")),
                   Catch::Contains("M.json: collectives[0]: unknown key 'colour' (valid: ") &&
                       Catch::Contains("time_us"));
    }
    SECTION("unknown top-level list") {
        CHECK_THAT(error_of(replace(kMinimal, "\"collectives\"", "\"collective\"")),
                   Catch::Contains("M.json: (top): unknown key 'collective'"));
    }
    SECTION("a list that is not a list") {
        CHECK_THAT(error_of(R"({"format": "clustersim-measurements", "version": 1,
            "environment": {"device": "x", "device_count": 1}, "gemms": {}})"),
                   Catch::Contains("M.json: gemms: expected a list, got {}"));
    }
    SECTION("a derived rate that disagrees with the time") {
        CHECK_THAT(error_of(replace(kMinimal, "\"time_us\": 52.61",
                                    "\"time_us\": 52.61, \"busbw_gbps\": 40.0")),
                   Catch::Contains("collectives[0].busbw_gbps: 40 disagrees with algbw x the "
                                   "bus factor = 34.8795"));
    }
    SECTION("a rate that agrees is accepted") {
        CHECK(error_of(replace(kMinimal, "\"time_us\": 52.61",
                               "\"time_us\": 52.61, \"algbw_gbps\": 19.93, \"busbw_gbps\": "
                               "34.88")) == "(no error)");
    }
    SECTION("duplicate points") {
        const std::string line =
            R"({"op": "all_reduce", "gpus": 8, "bytes": 1048576, "dtype": "fp32", "in_place": false, "time_us": 52.61})";
        CHECK_THAT(
            error_of(replace(kMinimal, line, line + ",\n    " + replace(line, "52.61", "53.0"))),
            Catch::Contains("M.json: collectives[1]: duplicate point (all_reduce, 8 GPUs, "
                            "1048576 B, fp32, out-of-place): first as collectives[0]"));
    }
    SECTION("unknown copy kind") {
        CHECK_THAT(error_of(R"({"format": "clustersim-measurements", "version": 1,
            "environment": {"device": "x", "device_count": 1}, "copies": [{"kind": "disk",
            "method": "memcpy", "bytes": 4096, "src_gpu": 0, "dst_gpu": 0, "time_us": 1}]})"),
                   Catch::Contains("copies[0].kind: unknown copy kind 'disk' (valid: "
                                   "device_to_device, host_to_device, device_to_host, peer)"));
    }
    SECTION("a peer copy within one GPU") {
        CHECK_THAT(error_of(R"({"format": "clustersim-measurements", "version": 1,
            "environment": {"device": "x", "device_count": 1}, "copies": [{"kind": "peer",
            "method": "memcpy", "bytes": 4096, "src_gpu": 0, "dst_gpu": 0, "time_us": 1}]})"),
                   Catch::Contains("M.json: copies[0]: bytes must be positive, and src_gpu "
                                   "differ from dst_gpu exactly for peer copies"));
    }
    SECTION("unknown launch method") {
        CHECK_THAT(error_of(R"({"format": "clustersim-measurements", "version": 1,
            "environment": {"device": "x", "device_count": 1}, "launches": [{"method": "slow",
            "time_us": 2, "launches": 1}]})"),
                   Catch::Contains("launches[0].method: unknown launch method 'slow'"));
    }
    SECTION("a step whose parallel sizes do not multiply to its GPUs") {
        CHECK_THAT(error_of(R"({"format": "clustersim-measurements", "version": 1,
            "environment": {"device": "x", "device_count": 8}, "steps": [{"gpus": 8,
            "model": {"kind": "transformer"}, "parallel": {"tp": 2, "pp": 2, "dp": 1},
            "time_ms": 100}]})"),
                   Catch::Contains("M.json: steps[0]: parallel: tp 2 x pp 2 x dp 1 = 4 but gpus "
                                   "is 8"));
    }
    SECTION("a step with an unknown setting") {
        CHECK_THAT(error_of(R"({"format": "clustersim-measurements", "version": 1,
            "environment": {"device": "x", "device_count": 8}, "steps": [{"gpus": 8,
            "model": {"kind": "transformer", "hiden": 1024}, "time_ms": 100}]})"),
                   Catch::Contains("M.json: steps[0].model.hiden: unknown model key 'hiden'"));
    }
    SECTION("a step without a model") {
        CHECK_THAT(error_of(R"({"format": "clustersim-measurements", "version": 1,
            "environment": {"device": "x", "device_count": 8}, "steps": [{"gpus": 8,
            "model": {"layers": 4}, "time_ms": 100}]})"),
                   Catch::Contains("model: expected a preset name or an object with 'kind'"));
    }
    SECTION("an empty device name") {
        CHECK_THAT(error_of(replace(kMinimal, "\"NVIDIA A100-SXM4-80GB\"", "\"\"")),
                   Catch::Contains("environment.device: expected the GPU's name"));
    }
}

TEST_CASE("measurements: merging keeps one GPU model per file", "[calibrate][measurements]") {
    MeasurementFile a = sample();
    MeasurementFile b;
    b.environment.device = "NVIDIA A100-SXM4-80GB";
    CHECK_THROWS_WITH(merge_measurements(a, b, "b.json"),
                      Catch::Contains("b.json: device 'NVIDIA A100-SXM4-80GB' differs from "
                                      "'NVIDIA H100 80GB HBM3'"));
    MeasurementFile c;
    c.environment.device = "unknown";
    c.environment.nccl_version = "2.18.5";
    GemmMeasurement g;
    g.m = g.n = g.k = 1024;
    g.time = Time::us(20);
    c.gemms.push_back(g);
    const auto warnings = merge_measurements(a, c, "c.json");
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings.front(), Catch::Contains("nccl_version '2.18.5' differs from '2.28.9'"));
    CHECK(a.gemms.size() == 3);
    CHECK(a.environment.device == "NVIDIA H100 80GB HBM3");
    // The same point twice is refused once merged.
    MeasurementFile d = sample();
    merge_measurements(d, sample(), "again.json");
    CHECK_THROWS_WITH(
        check_measurements(d, "merged"),
        Catch::Contains("merged: collectives[3] (from log.txt:22): duplicate point") &&
            Catch::Contains("first as collectives[0] (from log.txt:22)"));
}

TEST_CASE("measurements: the example in docs/measurements.md is what the writer writes",
          "[calibrate][measurements]") {
    std::ifstream in(CLUSTERSIM_SOURCE_DIR "/docs/measurements.md");
    std::stringstream doc;
    doc << in.rdbuf();
    const std::string text = doc.str();
    const auto begin = text.find("```json\n");
    REQUIRE(begin != std::string::npos);
    const auto end = text.find("```", begin + 8);
    const std::string example = text.substr(begin + 8, end - begin - 8);
    const MeasurementFile f = parse_measurements(example, "docs/measurements.md");
    CHECK(f.size() == 11);
    CHECK(format_measurements(f) == example);
}

TEST_CASE("measurements: a file another tool wrote reads (indented, other key order)",
          "[calibrate][measurements]") {
    // What scripts/pytorch/lecture_mlp_step.py writes (json.dumps, indent=2).
    const std::string text = R"json({
  "format": "clustersim-measurements",
  "version": 1,
  "environment": {
    "device": "NVIDIA H100 80GB HBM3",
    "device_count": 1,
    "cuda_version": "runtime 12.4 (PyTorch 2.4.0)",
    "nccl_version": "2.20.5",
    "date": "2025-01-01T00:00:00Z",
    "host": "h",
    "tool": "scripts/pytorch/lecture_mlp_step.py"
  },
  "collectives": [],
  "gemms": [],
  "copies": [],
  "p2p": [],
  "launches": [],
  "steps": [
    {
      "gpus": 1,
      "model": {
        "dim": 1024,
        "kind": "mlp",
        "layers": 4
      },
      "training": {
        "dtype": "fp32",
        "global_batch": 128,
        "micro_batch": 128,
        "optimizer": "adamw"
      },
      "parallel": {
        "dp": 1,
        "pp": 1,
        "tp": 1
      },
      "time_ms": 1.23456789,
      "source": "scripts/pytorch/lecture_mlp_step.py"
    }
  ]
}
)json";
    const MeasurementFile f = parse_measurements(text, "step.json");
    REQUIRE(f.steps.size() == 1);
    CHECK(f.steps[0].time == Time::ps(1'234'567'890));
    CHECK(f.steps[0].overrides() ==
          std::vector<std::string>{"model.dim=1024", "model.kind=mlp", "model.layers=4",
                                   "training.dtype=fp32", "training.global_batch=128",
                                   "training.micro_batch=128", "training.optimizer=adamw",
                                   "parallel.dp=1", "parallel.pp=1", "parallel.tp=1"});
    CHECK(f.environment.cuda_version == "runtime 12.4 (PyTorch 2.4.0)");
    // ... and the step is one the simulator can predict (the lecture MLP on one H100).
    const auto h100 = strategies::parallel::load_platform("dgx-h100");
    CHECK(predict_step(h100, f.steps[0]) > 0);
}

TEST_CASE("measurements: untrusted JSON is bounded in depth and echoed in a short excerpt",
          "[calibrate][measurements][errors]") {
    SECTION("nesting 100,000 deep is refused at the line and column, without recursion") {
        const std::string deep = "{\"format\": \"clustersim-measurements\", \"version\": 1,\n"
                                 "\"environment\": " +
                                 std::string(100000, '[') + std::string(100000, ']') + "}";
        CHECK_THAT(error_of(deep), Catch::StartsWith("M.json:2:") &&
                                       Catch::Contains("nested deeper than 64 levels"));
        // The same depth of objects, and brackets inside strings do not count.
        std::string objects;
        for (int i = 0; i < 100000; ++i)
            objects += "{\"a\":";
        CHECK_THAT(error_of(objects), Catch::Contains("nested deeper than 64"));
        const std::string in_string =
            replace(kMinimal, "\"clustersim-measurements\"",
                    "\"clustersim-measurements\", \"note\": \"" + std::string(1000, '[') + "\"");
        CHECK_THAT(error_of(in_string), Catch::Contains("unknown key 'note'"));
    }
    SECTION("a deep value of the wrong type: the message shows at most 40 characters of it") {
        const std::string nested = std::string(60, '[') + std::string(60, ']');
        const std::string text = replace(kMinimal, "\"bytes\": 1048576", "\"bytes\": " + nested);
        const std::string what = error_of(text);
        CHECK_THAT(what, Catch::Contains("collectives[0].bytes: expected an integer, got " +
                                         std::string(37, '[') + "..."));
    }
    SECTION("a 20 MB string where a number belongs: a one-line message of ordinary length") {
        const std::string text = replace(kMinimal, "\"bytes\": 1048576",
                                         "\"bytes\": \"" + std::string(20 << 20, 'x') + "\"");
        const std::string what = error_of(text);
        CHECK(what.size() < 200);
        CHECK_THAT(what, Catch::Contains("expected an integer, got \"xxx"));
    }
}

TEST_CASE("measurements: a number beyond double's range is an input error at its line",
          "[calibrate][measurements][errors]") {
    const std::string text = replace(kMinimal, "\"time_us\": 52.61", "\"time_us\": 1e400");
    CHECK_THAT(error_of(text), Catch::StartsWith("M.json:6:") &&
                                   Catch::Contains("number overflow parsing '1e400'") &&
                                   Catch::Contains("finite"));
}
