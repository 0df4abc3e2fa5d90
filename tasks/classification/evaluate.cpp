#include "tasks/classification/evaluate.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "bundle/bundle.h"
#include "checkpoints/safetensors.h"
#include "core/error.h"
#include "core/progress.h"
#include "datasets/image_dataset.h"
#include "tasks/classification/classifier.h"

namespace kiln::classification {

namespace {

struct Batch {
  std::vector<float> input;
  std::vector<int> labels;        // -1: none
  std::vector<std::string> keys;  // where each image came from
  int size = 0;
};

// Reads, decodes and preprocesses batches on a background thread (decoding itself spread over
// OpenMP threads), keeping at most two ready batches ahead of the consumer.
class Loader {
 public:
  Loader(const EvalOptions& o, const PreprocessConfig& pre) : dataset_(open_image_dataset(o.data)), pre_(pre) {
    limit_ = o.limit;
    batch_ = o.batch;
    thread_ = std::thread([this] { run(); });
  }
  ~Loader() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::optional<size_t> size() const {
    auto n = dataset_->size();
    if (n && limit_) return std::min(*n, limit_);
    if (limit_) return limit_;
    return n;
  }
  const ImageDataset& dataset() const { return *dataset_; }
  // The next batch; false at the end. Rethrows the loader's error.
  bool pop(Batch& out) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !ready_.empty() || done_; });
    if (!ready_.empty()) {
      out = std::move(ready_.front());
      ready_.pop_front();
      cv_.notify_all();
      return true;
    }
    if (error_) std::rethrow_exception(error_);
    return false;
  }

 private:
  void run() {
    try {
      size_t taken = 0;
      const size_t per = static_cast<size_t>(pre_.channels) * pre_.height * pre_.width;
      while (true) {
        std::vector<LabeledImage> items;
        LabeledImage item;
        while (static_cast<int>(items.size()) < batch_ && (!limit_ || taken < limit_) && dataset_->next(item)) {
          items.push_back(std::move(item));
          ++taken;
        }
        if (items.empty()) break;
        Batch b;
        b.size = static_cast<int>(items.size());
        b.input.resize(per * items.size());
        std::vector<std::string> errors(items.size());
#pragma omp parallel for schedule(dynamic)
        for (int i = 0; i < b.size; ++i) {
          try {
            Image img = decode_image(items[i].bytes, items[i].key);
            preprocess(img, pre_, b.input.data() + i * per);
          } catch (const std::exception& e) {
            errors[i] = e.what();
          }
        }
        for (const auto& e : errors) KILN_CHECK(e.empty(), "{}", e);
        for (const auto& it : items) {
          b.labels.push_back(it.label);
          b.keys.push_back(it.key);
        }
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return ready_.size() < 2 || stop_; });
        if (stop_) return;
        ready_.push_back(std::move(b));
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> l(mu_);
      error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> l(mu_);
    done_ = true;
    cv_.notify_all();
  }

  std::unique_ptr<ImageDataset> dataset_;
  PreprocessConfig pre_;
  size_t limit_ = 0;
  int batch_ = 32;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  bool done_ = false, stop_ = false;
  std::exception_ptr error_;
};

int argmax(const float* v, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

bool in_top5(const float* v, int n, int label) {
  if (label < 0 || label >= n) return false;
  int greater = 0;
  for (int i = 0; i < n; ++i) greater += v[i] > v[label] || (v[i] == v[label] && i < label);
  return greater < 5;
}

}  // namespace

nlohmann::json EvalReport::to_json() const {
  auto pct = [&](double v) -> nlohmann::json { return labelled ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"images", images},
      {"labelled", labelled},
      {"top1", pct(top1)},
      {"top5", pct(top5)},
      {"agreement", has_reference ? nlohmann::json(agreement) : nlohmann::json(nullptr)},
      {"max_abs_logit_diff", has_reference ? nlohmann::json(max_abs_logit_diff) : nlohmann::json(nullptr)},
      {"mean_abs_logit_diff", has_reference ? nlohmann::json(mean_abs_logit_diff) : nlohmann::json(nullptr)},
      {"reference_top1", has_reference && labelled ? nlohmann::json(reference_top1) : nlohmann::json(nullptr)},
      {"nonfinite", nonfinite},
      {"images_per_s", images_per_s},
      {"seconds", seconds},
      {"device", device},
      {"data", data}};
  return j;
}

EvalReport evaluate(const std::string& bundle_path, const EvalOptions& o) {
  KILN_CHECK(o.batch >= 1 && o.batch <= 4096, "[eval] batch {} is out of range", o.batch);
  auto bundle = Bundle::open(bundle_path);
  ImageClassifier model(bundle, o.device);
  std::unique_ptr<ImageClassifier> reference;
  Tensor saved_reference;
  if (o.reference == "cpu" || o.reference == "cpu-reference") {
    reference = std::make_unique<ImageClassifier>(bundle, o.reference);
  } else if (o.reference.ends_with(".safetensors")) {
    saved_reference = SafetensorsFile(o.reference).to_float("logits");
    KILN_CHECK(saved_reference.shape.size() == 2 && saved_reference.shape[1] == model.num_classes(),
               "[eval] {}: 'logits' must be [images, {}]", o.reference, model.num_classes());
  } else if (!o.reference.empty()) {
    reference = std::make_unique<ImageClassifier>(Bundle::open(o.reference), "cpu");
    const auto &a = model.preprocess_config(), &b = reference->preprocess_config();
    KILN_CHECK(a.height == b.height && a.width == b.width && reference->num_classes() == model.num_classes(),
               "[eval] reference {} has another input size or class count", o.reference);
  }
  const int classes = model.num_classes();
  EvalReport r;
  r.device = model.engine().device();
  r.has_reference = !o.reference.empty();
  std::vector<float> all_logits;
  std::vector<float> all_labels;
  Loader loader(o, model.preprocess_config());
  r.data = loader.dataset().describe();
  auto size = loader.size();
  std::unique_ptr<ProgressBar> bar;
  if (o.progress) bar = std::make_unique<ProgressBar>("eval", size.value_or(0));
  auto start = std::chrono::steady_clock::now();
  size_t top1 = 0, top5 = 0, agree = 0, ref_top1 = 0;
  double sum_abs = 0;
  Batch b;
  std::vector<float> logits, ref_logits;
  while (loader.pop(b)) {
    logits.resize(static_cast<size_t>(b.size) * classes);
    model.run(b.input.data(), b.size, logits.data());
    if (reference) {
      ref_logits.resize(logits.size());
      reference->run(b.input.data(), b.size, ref_logits.data());
    } else if (r.has_reference) {
      KILN_CHECK(static_cast<int64_t>(r.images + b.size) <= saved_reference.shape[0],
                 "[eval] {} holds logits for {} images; the data has more", o.reference, saved_reference.shape[0]);
      ref_logits.assign(saved_reference.data.begin() + r.images * classes,
                        saved_reference.data.begin() + (r.images + b.size) * classes);
    }
    if (!o.save_logits.empty()) {
      all_logits.insert(all_logits.end(), logits.begin(), logits.end());
      for (int i = 0; i < b.size; ++i) all_labels.push_back(static_cast<float>(b.labels[i]));
    }
    for (int i = 0; i < b.size; ++i) {
      const float* l = logits.data() + static_cast<size_t>(i) * classes;
      bool finite = true;
      for (int c = 0; c < classes; ++c) finite &= std::isfinite(l[c]);
      r.nonfinite += !finite;
      const int label = b.labels[i];
      KILN_CHECK(label < classes, "[eval] {}: class {} is not one of the model's {} classes", b.keys[i], label,
                 classes);
      if (label >= 0) {
        ++r.labelled;
        top1 += argmax(l, classes) == label;
        top5 += in_top5(l, classes, label);
      }
      if (r.has_reference) {
        const float* rl = ref_logits.data() + static_cast<size_t>(i) * classes;
        agree += argmax(l, classes) == argmax(rl, classes);
        if (label >= 0) ref_top1 += argmax(rl, classes) == label;
        for (int c = 0; c < classes; ++c) {
          double d = std::fabs(static_cast<double>(l[c]) - rl[c]);
          if (!std::isfinite(d)) d = INFINITY;
          r.max_abs_logit_diff = std::max(r.max_abs_logit_diff, d);
          sum_abs += d;
        }
      }
    }
    r.images += b.size;
    if (bar) bar->update(r.images);
  }
  if (bar) bar->finish();
  KILN_CHECK(r.images > 0, "[eval] {} holds no images", o.data);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.images_per_s = r.images / r.seconds;
  if (r.labelled) {
    r.top1 = 100.0 * top1 / r.labelled;
    r.top5 = 100.0 * top5 / r.labelled;
    r.reference_top1 = 100.0 * ref_top1 / r.labelled;
  }
  if (!o.save_logits.empty()) {
    std::map<std::string, Tensor> out;
    out["logits"].shape = {static_cast<int64_t>(r.images), classes};
    out["logits"].data = std::move(all_logits);
    out["labels"].shape = {static_cast<int64_t>(r.images)};
    out["labels"].data = std::move(all_labels);
    write_safetensors(o.save_logits, out);
  }
  if (r.has_reference) {
    r.agreement = 100.0 * agree / r.images;
    r.mean_abs_logit_diff = sum_abs / (static_cast<double>(r.images) * classes);
  }
  return r;
}

}  // namespace kiln::classification
