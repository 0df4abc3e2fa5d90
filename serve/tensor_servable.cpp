// Any bundle on named tensors (kiln::Model's default graph): requests give every graph input with
// its datatype; requests whose inputs all lead with the "batch" symbol and agree on every other
// size are stacked along that dimension and their outputs split back.
#include <map>

#include "core/error.h"
#include "serve/servable.h"

namespace kiln::serve {
namespace {

class TensorServable : public Servable {
 public:
  TensorServable(const std::string& path, const ServableOptions& options) {
    Status s = Model::load(path, &model_, options.device);
    KILN_CHECK(s.ok(), "{}", s.message());
    inputs_ = model_->inputs();
    outputs_ = model_->outputs();
    batched_ = true;
    for (const auto& in : inputs_) batched_ = batched_ && !in.symbols.empty() && in.symbols[0] == "batch";
  }

  std::string platform() const override { return "kiln_tensor"; }
  const ModelInfo& info() const override { return model_->info(); }
  std::vector<TensorMetadata> inputs() const override { return metadata(inputs_); }
  std::vector<TensorMetadata> outputs() const override { return metadata(outputs_); }
  bool leads_with_batch() const override { return batched_; }

  Admission admit(const InferRequest& r) const override {
    if (r.inputs.size() != inputs_.size())
      bad_request("the model takes " + std::to_string(inputs_.size()) + " inputs, the request gives " +
                  std::to_string(r.inputs.size()));
    std::map<std::string, int64_t> symbols;
    Admission a;
    for (const auto& spec : inputs_) {
      const InferTensor* t = r.input(spec.name);
      if (!t) bad_request("the request has no input '" + spec.name + "'");
      if (t->datatype != datatype_of(spec.dtype))
        bad_request("input '" + spec.name + "' must be " + datatype_of(spec.dtype) + ", not " + t->datatype);
      if (t->shape.size() != spec.shape.size())
        bad_request("input '" + spec.name + "' must have " + std::to_string(spec.shape.size()) + " dimensions");
      for (size_t d = 0; d < spec.shape.size(); ++d) {
        if (spec.shape[d] >= 0 && t->shape[d] != spec.shape[d])
          bad_request("input '" + spec.name + "' must have size " + std::to_string(spec.shape[d]) + " in dimension " +
                      std::to_string(d));
        if (spec.shape[d] >= 0) continue;
        if (t->shape[d] < 1) bad_request("input '" + spec.name + "' has an empty dimension");
        auto [it, fresh] = symbols.emplace(spec.symbols[d], t->shape[d]);
        if (!fresh && it->second != t->shape[d])
          bad_request("inputs disagree on the size of '" + spec.symbols[d] + "'");
      }
      // The key: every size but the batch.
      a.key += spec.name + ":";
      for (size_t d = batched_ ? 1 : 0; d < t->shape.size(); ++d) a.key += std::to_string(t->shape[d]) + ",";
    }
    a.batch = batched_ ? r.input(inputs_[0].name)->shape[0] : 1;
    a.batchable = batched_;
    return a;
  }

  std::vector<std::vector<InferTensor>> run(const std::vector<Work>& batch) override {
    std::vector<HostTensor> in;
    for (const auto& spec : inputs_) in.push_back(stack(spec, batch));
    std::vector<HostTensor> out;
    Status s = model_->run(in, &out);
    if (!s.ok()) throw ServeError(ErrorKind::Internal, s.message());
    std::vector<std::vector<InferTensor>> results(batch.size());
    if (!batched_) {  // the batcher runs unbatchable requests alone
      for (const auto& o : out) results[0].push_back(slice(o, 0, 0, 0));
      return results;
    }
    int64_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      int64_t rows = batch[i].admission->batch;
      for (const auto& o : out) results[i].push_back(slice(o, in[0].shape[0], row, rows));
      row += rows;
    }
    return results;
  }

 private:
  static std::vector<TensorMetadata> metadata(const std::vector<TensorSpec>& specs) {
    std::vector<TensorMetadata> out;
    for (const auto& s : specs) out.push_back({s.name, datatype_of(s.dtype), s.shape});
    return out;
  }

  // The requests' tensors for one input, stacked along the batch dimension (admit() checked
  // that they agree on every other size).
  static HostTensor stack(const TensorSpec& spec, const std::vector<Work>& batch) {
    HostTensor t{spec.name, spec.dtype, batch[0].request->input(spec.name)->shape, {}};
    for (size_t i = 1; i < batch.size(); ++i) t.shape[0] += batch[i].request->input(spec.name)->shape[0];
    for (const Work& w : batch) {
      const InferTensor& x = *w.request->input(spec.name);
      t.data.insert(t.data.end(), x.data.begin(), x.data.end());
    }
    return t;
  }

  // Rows [row, row + rows) of an output stacked over a batch of `total` (total 0: the whole output).
  static InferTensor slice(const HostTensor& o, int64_t total, int64_t row, int64_t rows) {
    InferTensor t{o.name, datatype_of(o.dtype), o.shape, {}, {}, nlohmann::json::object()};
    if (total == 0) {
      t.data = o.data;
      return t;
    }
    if (o.shape.empty() || o.shape[0] != total)
      throw ServeError(ErrorKind::Internal, "output '" + o.name + "' does not lead with the batch");
    size_t row_bytes = o.data.size() / total;
    t.shape[0] = rows;
    t.data.assign(o.data.begin() + row * row_bytes, o.data.begin() + (row + rows) * row_bytes);
    return t;
  }

  std::unique_ptr<Model> model_;
  std::vector<TensorSpec> inputs_, outputs_;
  bool batched_ = false;
};

}  // namespace

std::unique_ptr<Servable> make_tensor_servable(const std::string& path, const ServableOptions& options) {
  return std::make_unique<TensorServable>(path, options);
}

}  // namespace kiln::serve
