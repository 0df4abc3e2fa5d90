// The op harness's cases: each is a small graph (usually one node) with its constants and
// inputs. tests/ops/op_harness.cpp runs every case on every backend and precision this machine
// has and compares the outputs with the CPU reference; cases live in tests/ops/cases/<op>.cpp:
//
//   KILN_OP_CASES(softmax) {
//     std::vector<OpCase> cases;
//     for (DType t : {DType::F32, DType::F16})
//       for (Shape s : {Shape{1, 1}, Shape{3, 17}}) {
//         OpCase c("softmax", t, s);                        // names the case after op, type, shape
//         int x = c.input("x", t, s);                       // random normal input
//         c.output(c.graph.add("softmax", "softmax", {x}, {{"axis", int64_t{-1}}}));
//         cases.push_back(std::move(c));
//       }
//     return cases;
//   }
#pragma once

#include <fmt/format.h>

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "graph/graph.h"
#include "kiln/tensor.h"

namespace kiln::test {

struct OpCase {
  OpCase(std::string op, DType dtype, const Shape& shape, const std::string& variant = "");

  std::string op;    // the op under test (--op filters on it)
  std::string name;  // "softmax/f16/[3, 17]/mask"
  Graph graph;
  std::map<std::string, HostTensor> constants;
  std::vector<HostTensor> inputs;
  // Largest accepted |backend - reference| / max(1, max |reference|), per compute type. Integer
  // outputs must match exactly.
  double tolerance_f32 = 1e-5, tolerance_f16 = 2e-2;
  // Whether the case also runs with a GPU computing in fp16: false for an f32 case whose
  // numbers f16 cannot hold (1000 + noise).
  bool fp16_precision = true;
  // A graph of simpler ops that must compute the same (a fused op's decomposition): checked on
  // every backend, CPU included, against the same inputs and constants.
  std::function<Graph()> decomposition;

  // Adds a graph input filled with seeded values: floats normal(0, scale), integers uniform in
  // [lo, hi), bools 0/1.
  int input(const std::string& name, DType dtype, const Shape& shape, double scale = 1.0, int64_t lo = 0,
            int64_t hi = 2);
  // Adds an input with given values (converted to dtype).
  int input_values(const std::string& name, DType dtype, const Shape& shape, const std::vector<float>& values);
  // Adds a state that the run starts from seeded normal(0, scale) contents, given with the
  // inputs (an engine sets a state named among them before the run): a state no node of the
  // run writes. Inputs keep their type under fp16, states do not, so an f32 case with one skips
  // the fp16 GPU configuration (fp16_precision).
  int state(const std::string& name, DType dtype, const Shape& shape, double scale = 1.0);
  // Adds a constant filled with seeded normal(0, scale) values (stored as f32, or i64 for integer dtypes).
  int constant(const std::string& name, DType dtype, const Shape& shape, double scale = 1.0);
  int constant_values(const std::string& name, DType dtype, const Shape& shape, const std::vector<float>& values);
  // Adds an f32 constant stored as f16, as an fp16 bundle stores its weights (a kernel that
  // reads the bytes in place sees halves), filled like constant().
  int constant_stored_f16(const std::string& name, const Shape& shape, double scale = 1.0);
  void output(int value, const std::string& name = "");

  std::mt19937 rng;

 private:
  std::vector<float> normal(const Shape& shape, double scale);  // seeded normal(0, scale) values
};

using OpCaseMaker = std::vector<OpCase> (*)();
bool register_op_cases(const char* op, OpCaseMaker maker);
std::vector<OpCase> all_op_cases();  // every registered case, in op order

}  // namespace kiln::test

#define KILN_OP_CASES(op)                                              \
  static std::vector<::kiln::test::OpCase> kiln_op_cases_##op();       \
  [[maybe_unused]] static const bool kiln_op_cases_##op##_registered = \
      ::kiln::test::register_op_cases(#op, kiln_op_cases_##op);        \
  static std::vector<::kiln::test::OpCase> kiln_op_cases_##op()
