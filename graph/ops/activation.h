// Elementwise activations: ops of their own (relu, silu, ...) and the epilogue of conv2d,
// linear and mlp (their "act" attribute).
#pragma once

#include <string>

namespace kiln {

// GeluTanh is GELU's tanh approximation (PyTorch approximate="tanh").
enum class Activation { None, ReLU, SiLU, Sigmoid, Tanh, Gelu, GeluTanh };

const char* activation_name(Activation a);             // "none", "relu", "silu", ...
Activation parse_activation(const std::string& name);  // throws "[graph] unknown activation"

struct Node;
// The function an activation op's node computes (gelu with approximate="tanh": GeluTanh).
Activation node_activation(const Node& node);

}  // namespace kiln
