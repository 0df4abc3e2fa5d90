// Checkpoint manifests: what a family qualifies (families/<name>/manifests/*.toml). A manifest
// pins a Hub checkpoint (id and revision commit), lists the builds kiln ships of it (precision,
// batch sizes, FP8 recipe and calibration data) and the accuracy gates each build must pass,
// with the data they run on (relative to the test data folder, KILN_TEST_DATA). See
// docs/manifests.md for every key.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct ManifestBuild {
  std::string precision;  // fp32, fp16, fp8
  std::vector<int> batch_sizes;
  std::string recipe, calibration;  // fp8
  int calibration_samples = 500;
};

struct ManifestGate {
  std::string name, build, device, kind;  // build: a precision of `builds`; kind: parity, eval or generation
  // The local checkpoint the gate builds from: the pinned Hub checkpoint, or a stand-in of the
  // same architecture where the Hub cannot be reached.
  std::string checkpoint;
  // parity: the graph's input from `reference`'s tensor `inputs`, its first output against `outputs`.
  std::string reference, inputs, outputs;
  std::optional<double> max_abs_diff, min_top1_agreement;
  // eval: the task's evaluation on `data`; `against` is "fp32" (the fp32 build on the CPU) or
  // "cpu" (this build on the CPU).
  std::string data, against;
  int limit = 0;
  std::optional<double> min_top1, min_agreement;
  // generation: the examples of `reference` (a seq2seq reference JSON) generated from their
  // source ids, `generation` ("greedy" or "default": the checkpoint's own settings) with
  // `max_new_tokens`; min_identical: the share of outputs with the reference's exact token ids.
  std::string generation;
  int max_new_tokens = 64;
  std::optional<double> min_identical;
};

struct Manifest {
  std::string file;  // where it came from, for messages
  std::string family, id, revision, architecture;
  std::vector<ManifestBuild> builds;
  std::vector<ManifestGate> gates;
};

// Parses a manifest; throws "[manifest] FILE: ..." for malformed TOML, unknown keys or missing ones.
Manifest parse_manifest(const std::string& toml_text, const std::string& file);

// Checks a manifest against its family and the data folder: the family and architecture are
// known, the revision is a pinned commit (40 hex digits), every build and gate is complete and
// consistent, recipes exist, and every file a gate names exists under `data_dir`. Returns one
// message per problem (empty: valid).
std::vector<std::string> check_manifest(const Manifest& m, const std::string& data_dir);

}  // namespace kiln
