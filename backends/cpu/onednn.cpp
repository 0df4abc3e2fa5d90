#include "backends/cpu/onednn.h"

#include "backends/cpu/scratch.h"

namespace kiln::cpu {

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// One per thread: engines may run on several threads at once (kiln serve), and a stream is not
// meant to be shared between threads.
dnnl::stream& onednn_stream() {
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

dnnl::primitive_attr onednn_attr(const dnnl::post_ops& ops) {
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory onednn_scratchpad(const dnnl::memory::desc& scratchpad_desc) {
  return dnnl::memory(scratchpad_desc, onednn_engine(), scratch(Scratch::Onednn, scratchpad_desc.get_size()));
}

PackedWeights::PackedWeights(const dnnl::memory::desc& stored, const void* data, const dnnl::memory::desc& layout)
    : storage_(allocate_pages(layout.get_size())), memory_(layout, onednn_engine(), storage_.get()) {
  dnnl::memory from(stored, onednn_engine(), const_cast<void*>(data));  // only read
  dnnl::reorder(from, memory_).execute(onednn_stream(), from, memory_);
  onednn_stream().wait();
}

bool append_activation(dnnl::post_ops& ops, Activation act) {
  using dnnl::algorithm;
  switch (act) {
    case Activation::None:
      return true;
    case Activation::ReLU:
      ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      return true;
    case Activation::SiLU:  // x * sigmoid(alpha * x)
      ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
      return true;
    case Activation::Sigmoid:
      ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
      return true;
    case Activation::Tanh:
      ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
      return true;
    case Activation::Gelu:
      ops.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
      return true;
    case Activation::GeluTanh:
      ops.append_eltwise(1.0f, algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
      return true;
  }
  return false;
}

}  // namespace kiln::cpu
