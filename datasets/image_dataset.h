// Labelled image sources for evaluation and calibration, chosen by what SRC is:
//   - WebDataset shards: a .tar file, a folder of .tar files, or a glob ("shard-*.tar");
//     samples are KEY.jpg|png|webp + KEY.cls (class index as text);
//   - a folder with labels.tsv: "file<TAB>class index" per line;
//   - an ImageFolder tree: one sub-folder per class, classes numbered in sorted order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct LabeledImage {
  std::string key;  // shard key or file path
  std::vector<uint8_t> bytes;
  int label = -1;
};

class ImageDataset {
 public:
  virtual ~ImageDataset() = default;
  // Fills `out` with the next image; false at the end. Throws kiln::Error on malformed data.
  virtual bool next(LabeledImage& out) = 0;
  virtual std::optional<size_t> size() const { return std::nullopt; }  // when known up front
  virtual std::string describe() const = 0;
};

std::unique_ptr<ImageDataset> open_image_dataset(const std::string& src);

}  // namespace kiln
