#include "graph/op.h"

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

// Defined in a file the build generates from the files of graph/ops/ (see CMakeLists.txt).
void register_builtin_ops(OpRegistry& registry);

OpRegistry& OpRegistry::instance() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    register_builtin_ops(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::add(std::unique_ptr<OpDef> op) {
  KILN_CHECK(!find(op->name()), "[graph] op '{}' is registered twice", op->name());
  ops_.push_back(std::move(op));
}

const OpDef* OpRegistry::find(const std::string& name) const {
  for (const auto& op : ops_)
    if (op->name() == name) return op.get();
  return nullptr;
}

const OpDef& OpRegistry::get(const std::string& name) const {
  const OpDef* op = find(name);
  KILN_CHECK(op, "[graph] unknown op '{}'", name);
  return *op;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& op : ops_) out.push_back(op->name());
  return out;
}

void require_float(const std::optional<DType>& t, const Node& node, const char* input) {
  KILN_CHECK(t && is_float(*t), "[{}] {}: {} must be a float tensor", node.op, node.name, input);
}

void require_integer(const std::optional<DType>& t, const Node& node, const char* input) {
  KILN_CHECK(t && is_integer(*t), "[{}] {}: {} must be an i32 or i64 tensor", node.op, node.name, input);
}

void require_same(const std::optional<DType>& a, const std::optional<DType>& b, const Node& node) {
  KILN_CHECK(a && b && *a == *b, "[{}] {}: inputs of different types ({} and {})", node.op, node.name,
             a ? dtype_name(*a) : "none", b ? dtype_name(*b) : "none");
}

void require_rank(const std::optional<Shape>& s, size_t rank, const Node& node, const char* input) {
  KILN_CHECK(s && s->size() == rank, "[{}] {}: {} must have rank {}, got {}", node.op, node.name, input, rank,
             s ? to_string(*s) : "none");
}

}  // namespace kiln
