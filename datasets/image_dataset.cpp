#include "datasets/image_dataset.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/read_file.h"
#include "datasets/webdataset.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

bool is_image_ext(const std::string& ext) {
  std::string e = ext;
  std::transform(e.begin(), e.end(), e.begin(), ::tolower);
  return e == "jpg" || e == "jpeg" || e == "png" || e == "webp";
}

std::vector<uint8_t> read_all(const std::string& path) {
  const std::string file = read_file(path, kMaxSmallFileBytes);
  return {file.begin(), file.end()};
}

int parse_label(const std::string& text, const std::string& where) {
  size_t used = 0;
  int v = -1;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  while (used < text.size() && std::isspace(static_cast<unsigned char>(text[used]))) ++used;
  KILN_CHECK(used == text.size() && v >= 0, "[dataset] {}: class '{}' is not a non-negative integer", where, text);
  return v;
}

class ShardDataset : public ImageDataset {
 public:
  explicit ShardDataset(std::vector<std::string> shards) : shards_(std::move(shards)) {}
  bool next(LabeledImage& out) override {
    Sample s;
    while (true) {
      if (!reader_) {
        if (index_ >= shards_.size()) return false;
        reader_ = std::make_unique<WebDatasetReader>(shards_[index_++]);
      }
      if (reader_->next(s)) break;
      reader_.reset();
    }
    out = LabeledImage{};
    out.key = s.key;
    for (auto& [ext, bytes] : s.parts)
      if (is_image_ext(ext)) out.bytes = std::move(bytes);
    KILN_CHECK(!out.bytes.empty(), "[dataset] {}: sample '{}' has no jpg, png or webp", shards_[index_ - 1], s.key);
    auto cls = s.parts.find("cls");
    KILN_CHECK(cls != s.parts.end(), "[dataset] {}: sample '{}' has no .cls label", shards_[index_ - 1], s.key);
    out.label = parse_label(std::string(cls->second.begin(), cls->second.end()), s.key);
    return true;
  }
  std::string describe() const override { return std::to_string(shards_.size()) + " WebDataset shard(s)"; }

 private:
  std::vector<std::string> shards_;
  size_t index_ = 0;
  std::unique_ptr<WebDatasetReader> reader_;
};

class FileListDataset : public ImageDataset {
 public:
  FileListDataset(std::vector<std::pair<std::string, int>> files, std::string what)
      : files_(std::move(files)), what_(std::move(what)) {}
  bool next(LabeledImage& out) override {
    if (index_ >= files_.size()) return false;
    out = LabeledImage{};
    out.key = files_[index_].first;
    out.label = files_[index_].second;
    out.bytes = read_all(out.key);
    ++index_;
    return true;
  }
  std::optional<size_t> size() const override { return files_.size(); }
  std::string describe() const override { return what_; }

 private:
  std::vector<std::pair<std::string, int>> files_;
  std::string what_;
  size_t index_ = 0;
};

std::vector<std::string> glob_paths(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::unique_ptr<ImageDataset> open_image_dataset(const std::string& src) {
  if (src.find_first_of("*?[") != std::string::npos) {
    auto shards = glob_paths(src);
    KILN_CHECK(!shards.empty(), "[dataset] {} matches no files", src);
    return std::make_unique<ShardDataset>(shards);
  }
  KILN_CHECK(fs::exists(src), "[dataset] {} does not exist", src);
  if (fs::is_regular_file(src)) {
    KILN_CHECK(src.ends_with(".tar"), "[dataset] {}: a file source must be a .tar shard", src);
    return std::make_unique<ShardDataset>(std::vector<std::string>{src});
  }
  fs::path dir(src);
  if (fs::exists(dir / "labels.tsv")) {
    std::ifstream in(dir / "labels.tsv");
    std::vector<std::pair<std::string, int>> files;
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.empty()) continue;
      auto tab = line.find('\t');
      KILN_CHECK(tab != std::string::npos, "[dataset] {}/labels.tsv line {}: expected file<TAB>class", src, lineno);
      std::string file = line.substr(0, tab);
      KILN_CHECK(file.find("..") == std::string::npos && !file.starts_with("/"),
                 "[dataset] {}/labels.tsv line {}: '{}' is not a path inside the folder", src, lineno, file);
      files.emplace_back((dir / file).string(),
                         parse_label(line.substr(tab + 1), src + "/labels.tsv line " + std::to_string(lineno)));
    }
    KILN_CHECK(!files.empty(), "[dataset] {}/labels.tsv lists no images", src);
    return std::make_unique<FileListDataset>(files, std::to_string(files.size()) + " images from labels.tsv");
  }
  std::vector<std::string> shards, classes;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".tar") shards.push_back(e.path().string());
    if (e.is_directory()) classes.push_back(e.path().filename().string());
  }
  if (!shards.empty()) {
    std::sort(shards.begin(), shards.end());
    return std::make_unique<ShardDataset>(shards);
  }
  KILN_CHECK(!classes.empty(), "[dataset] {}: no .tar shards, labels.tsv or class folders", src);
  std::sort(classes.begin(), classes.end());
  std::vector<std::pair<std::string, int>> files;
  for (size_t c = 0; c < classes.size(); ++c) {
    std::vector<std::string> in_class;
    for (const auto& e : fs::directory_iterator(dir / classes[c]))
      if (e.is_regular_file() &&
          is_image_ext(e.path().extension().string().substr(e.path().extension().empty() ? 0 : 1)))
        in_class.push_back(e.path().string());
    std::sort(in_class.begin(), in_class.end());
    for (auto& f : in_class) files.emplace_back(f, static_cast<int>(c));
  }
  KILN_CHECK(!files.empty(), "[dataset] {}: the class folders hold no images", src);
  return std::make_unique<FileListDataset>(
      files, std::to_string(files.size()) + " images in " + std::to_string(classes.size()) + " class folders");
}

}  // namespace kiln
