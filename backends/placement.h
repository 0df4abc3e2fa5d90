// Where an engine runs each node: on its backend where that backend has a kernel, else on the
// CPU, node by node (never the whole graph); and the copies where a value crosses devices.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "graph/graph.h"

namespace kiln {

// Sets Node::device of every node: `primary` where it supports the node, else "cpu". Views
// (reshape) follow their input; every node that touches a state goes where the state's other
// users are (to the CPU if any of them must). Returns the ops placed on the CPU against the
// primary's choice, with their node counts.
std::map<std::string, int> place_nodes(Graph& graph, const Backend& primary);

// Per value, the device its memory is on: its producer's; a graph input's or a state's, the
// device of its users (a GPU when any user is on one); "" for constants (each backend keeps
// its own copy).
std::vector<std::string> value_devices(const Graph& graph);

// Adds a copy node wherever a node reads a value that lives on another device (one per value
// and device), then restores topological order.
void insert_copies(Graph& graph);

}  // namespace kiln
