#include "tests/ops/op_case.h"

#include <fmt/format.h>

#include "core/dtype.h"

namespace kiln::test {

namespace {

std::map<std::string, OpCaseMaker>& makers() {
  static std::map<std::string, OpCaseMaker> m;
  return m;
}

HostTensor make_tensor(const std::string& name, DType dtype, const Shape& shape, const std::vector<float>& values) {
  HostTensor t = HostTensor::zeros(name, dtype, shape);
  if (dtype == DType::I64) {  // exact for the small integers tests use
    for (size_t i = 0; i < values.size(); ++i) t.as<int64_t>()[i] = static_cast<int64_t>(values[i]);
  } else {
    convert_from_f32(dtype, values.data(), t.data.data(), static_cast<int64_t>(values.size()));
  }
  return t;
}

}  // namespace

OpCase::OpCase(std::string op_, DType dtype, const Shape& shape, const std::string& variant)
    : op(std::move(op_)), rng(static_cast<uint32_t>(std::hash<std::string>()(op + to_string(shape) + variant))) {
  name = fmt::format("{}/{}/{}", op, dtype_name(dtype), to_string(shape));
  if (!variant.empty()) name += "/" + variant;
}

int OpCase::input(const std::string& n, DType dtype, const Shape& shape, double scale, int64_t lo, int64_t hi) {
  if (is_float(dtype)) return input_values(n, dtype, shape, normal(shape, scale));
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  std::uniform_int_distribution<int64_t> d(dtype == DType::Bool ? 0 : lo, dtype == DType::Bool ? 1 : hi - 1);
  for (auto& x : v) x = static_cast<float>(d(rng));
  return input_values(n, dtype, shape, v);
}

int OpCase::input_values(const std::string& n, DType dtype, const Shape& shape, const std::vector<float>& values) {
  inputs.push_back(make_tensor(n, dtype, shape, values));
  return graph.add_input(n, dtype, fixed_shape(shape));
}

int OpCase::state(const std::string& n, DType dtype, const Shape& shape, double scale) {
  inputs.push_back(make_tensor(n, dtype, shape, normal(shape, scale)));
  if (dtype == DType::F32) fp16_precision = false;
  return graph.add_state(n, dtype, fixed_shape(shape));
}

int OpCase::constant(const std::string& n, DType dtype, const Shape& shape, double scale) {
  std::vector<float> v = normal(shape, scale);
  if (!is_float(dtype))
    for (auto& x : v) x = std::round(std::fabs(x));
  return constant_values(n, dtype, shape, v);
}

int OpCase::constant_values(const std::string& n, DType dtype, const Shape& shape, const std::vector<float>& values) {
  constants[n] = make_tensor(n, is_float(dtype) ? DType::F32 : dtype, shape, values);
  return graph.add_constant(n, dtype, shape);
}

int OpCase::constant_stored_f16(const std::string& n, const Shape& shape, double scale) {
  constants[n] = make_tensor(n, DType::F16, shape, normal(shape, scale));
  return graph.add_constant(n, DType::F32, shape);
}

std::vector<float> OpCase::normal(const Shape& shape, double scale) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  std::normal_distribution<float> d(0.0f, static_cast<float>(scale));
  for (auto& x : v) x = d(rng);
  return v;
}

void OpCase::output(int value, const std::string& n) {
  graph.add_output(n.empty() ? fmt::format("y{}", graph.outputs().size()) : n, value);
}

bool register_op_cases(const char* op, OpCaseMaker maker) {
  makers()[op] = maker;
  return true;
}

std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> out;
  for (const auto& [op, maker] : makers())
    for (auto& c : maker()) out.push_back(std::move(c));
  return out;
}

}  // namespace kiln::test
