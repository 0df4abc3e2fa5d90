// Translation and summarization (encoder-decoder bundles): source texts as a BYTES input "text"
// (UTF-8), generated texts as the BYTES output "text"; the request parameters "num_beams" and
// "max_new_tokens" override the bundle's generation settings. Requests with the same settings
// decode as one batch.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/utf8.h"
#include "serve/servable.h"

namespace kiln::serve {
namespace {

class TextServable : public Servable {
 public:
  TextServable(const std::string& path, const ServableOptions& options) {
    Status s = TextGenerator::load(path, &model_, options.device);
    KILN_CHECK(s.ok(), "{}", s.message());
  }

  std::string platform() const override { return "kiln_" + info().task; }
  const ModelInfo& info() const override { return model_->info(); }
  std::vector<TensorMetadata> inputs() const override { return {{"text", "BYTES", {-1}}}; }
  std::vector<TensorMetadata> outputs() const override { return {{"text", "BYTES", {-1}}}; }

  Admission admit(const InferRequest& r) const override {
    if (r.inputs.size() != 1) bad_request("give one input: 'text' (UTF-8 strings)");
    int64_t batch = bytes_batch(r, "text");
    const auto& texts = r.input("text")->strings;
    for (size_t i = 0; i < texts.size(); ++i)
      if (!valid_utf8(texts[i])) bad_request("text " + std::to_string(i) + " is not valid UTF-8");
    GenerationOptions o = options(r);
    return {batch, fmt::format("{}/{}", o.num_beams.value_or(0), o.max_new_tokens.value_or(0)), true, {}};
  }

  std::vector<std::vector<InferTensor>> run(const std::vector<Work>& batch) override {
    std::vector<std::string> sources;
    for (const Work& w : batch) {
      const auto& t = w.request->input("text")->strings;
      sources.insert(sources.end(), t.begin(), t.end());
    }
    GenerationOptions o = options(*batch[0].request);
    o.batch = static_cast<int>(sources.size());
    std::vector<GeneratedText> out;
    Status s = model_->generate(sources, o, &out);
    if (!s.ok()) throw ServeError(ErrorKind::Internal, s.message());
    std::vector<std::vector<InferTensor>> results;
    size_t next = 0;
    for (const Work& w : batch) {
      std::vector<std::string> texts;
      for (int64_t k = 0; k < w.admission->batch; ++k) texts.push_back(out[next++].text);
      results.push_back({bytes_tensor("text", {w.admission->batch}, std::move(texts))});
    }
    return results;
  }

 private:
  static GenerationOptions options(const InferRequest& r) {
    GenerationOptions o;
    // NaN: not given (the bundle's setting)
    const double absent = std::numeric_limits<double>::quiet_NaN();
    double beams = number_parameter(r, "num_beams", absent), tokens = number_parameter(r, "max_new_tokens", absent);
    if (!std::isnan(beams) && (!(beams >= 1 && beams <= 16) || beams != std::floor(beams)))
      bad_request("parameter 'num_beams' must be an integer from 1 to 16");
    if (!std::isnan(tokens) && (!(tokens >= 1 && tokens <= 4096) || tokens != std::floor(tokens)))
      bad_request("parameter 'max_new_tokens' must be an integer from 1 to 4096");
    if (beams > 0) o.num_beams = static_cast<int>(beams);
    if (tokens > 0) o.max_new_tokens = static_cast<int64_t>(tokens);
    return o;
  }

  std::unique_ptr<TextGenerator> model_;
};

}  // namespace

std::unique_ptr<Servable> make_text_servable(const std::string& path, const ServableOptions& options) {
  return std::make_unique<TextServable>(path, options);
}

}  // namespace kiln::serve
