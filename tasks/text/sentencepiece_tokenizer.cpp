#include "tasks/text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base64.h"
#include "core/error.h"
#include "core/json_int.h"

namespace kiln {

namespace {

constexpr int64_t kMaxVocab = 1 << 24;

// A SentencePiece model proto read field by field, by hand because the library's headers do not
// include its protobuf classes. fn(field, varint value, bytes) sees each varint and
// length-delimited field (fixed-width ones are skipped); false where the bytes are malformed.
// Every length is checked against what is left.
bool for_each_field(std::string_view msg,
                    const std::function<void(uint64_t field, uint64_t value, std::string_view bytes)>& fn) {
  auto varint = [](std::string_view& b, uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && !b.empty(); shift += 7) {
      const auto c = static_cast<uint8_t>(b.front());
      b.remove_prefix(1);
      *v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  };
  while (!msg.empty()) {
    uint64_t key = 0, v = 0;
    if (!varint(msg, &key)) return false;
    switch (key & 7) {
      case 0:
        if (!varint(msg, &v)) return false;
        fn(key >> 3, v, {});
        break;
      case 1:
      case 5: {
        const size_t n = (key & 7) == 1 ? 8 : 4;
        if (msg.size() < n) return false;
        msg.remove_prefix(n);
        break;
      }
      case 2:
        if (!varint(msg, &v) || v > msg.size()) return false;
        fn(key >> 3, 0, msg.substr(0, v));
        msg.remove_prefix(v);
        break;
      default:
        return false;
    }
  }
  return true;
}

// Whether every piece of the model (ModelProto field 1; SentencePiece field 1, the text) has
// text. The library builds its trie of pieces with a routine that aborts the process on an empty
// key rather than returning an error, so a model with one is refused before it is loaded.
bool pieces_have_text(std::string_view proto) {
  bool ok = true;
  const bool well_formed = for_each_field(proto, [&](uint64_t field, uint64_t, std::string_view piece) {
    if (field != 1) return;
    bool text = false;
    ok = for_each_field(piece,
                        [&](uint64_t f, uint64_t, std::string_view bytes) { text |= f == 1 && !bytes.empty(); }) &&
         text && ok;
  });
  return well_formed && ok;
}

// Whether a precompiled normalisation map (NormalizerSpec field 2) is safe to hand to the library,
// which walks the map's double-array trie (darts-clone units) without bounds checks and reads
// each replacement as a C string at the offset a trie leaf holds: a corrupt map made it read far
// past the buffer (found by tokenizer_fuzz). The map is a little-endian uint32 trie size, the
// trie's 32-bit units, then the NUL-terminated replacements. Every node reachable from the
// root must have room for all 256 children in the array (the library indexes node ^ byte
// for whatever byte comes next), and every leaf's value must start a replacement that ends
// inside the map. Real maps pass: darts-clone builds its array in whole blocks of 256 units.
bool charsmap_is_safe(std::string_view map) {
  uint32_t trie_bytes = 0;
  if (map.size() <= sizeof trie_bytes) return false;
  std::memcpy(&trie_bytes, map.data(), sizeof trie_bytes);
  map.remove_prefix(sizeof trie_bytes);
  if (trie_bytes >= map.size()) return false;
  const size_t units = trie_bytes / 4;
  const std::string_view replacements = map.substr(trie_bytes);
  auto unit = [&](size_t i) {
    uint32_t u = 0;
    std::memcpy(&u, map.data() + 4 * i, 4);
    return u;
  };
  auto offset = [](uint32_t u) -> size_t { return (u >> 10) << ((u & (1u << 9)) >> 6); };
  auto fits = [&](size_t node) { return (node | 0xFF) < units; };
  if (units == 0 || !fits(offset(unit(0)))) return false;
  std::vector<bool> seen(units, false);
  std::vector<size_t> todo = {offset(unit(0))};
  seen[todo[0]] = true;
  while (!todo.empty()) {
    const size_t node = todo.back();
    todo.pop_back();
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const uint32_t u = unit(node ^ byte);
      if ((u & ((1u << 31) | 0xFF)) != byte) continue;  // no child for this byte
      const size_t child = (node ^ byte) ^ offset(u);
      if (!fits(child)) return false;
      if ((u >> 8) & 1) {  // a leaf: its value is the offset of a replacement
        const uint32_t value = unit(child) & ((1u << 31) - 1);
        if (value >= replacements.size() || replacements.find('\0', value) == std::string_view::npos) return false;
      }
      if (!seen[child]) {
        seen[child] = true;
        todo.push_back(child);
      }
    }
  }
  return true;
}

// Whether the normalisation maps of a model proto (ModelProto fields 3 and 5, normalizer_spec and
// denormalizer_spec; NormalizerSpec field 2, precompiled_charsmap) are absent or safe.
bool normalizers_are_safe(std::string_view proto) {
  bool ok = true;
  for_each_field(proto, [&](uint64_t field, uint64_t, std::string_view spec) {
    if (field != 3 && field != 5) return;
    ok = for_each_field(spec,
                        [&](uint64_t f, uint64_t, std::string_view map) {
                          if (f == 2 && !map.empty()) ok = ok && charsmap_is_safe(map);
                        }) &&
         ok;
  });
  return ok;
}

// Whether a SentencePiece model proto says its model type is unigram (ModelProto field 2,
// trainer_spec; TrainerSpec field 3, model_type: 1 unigram, the default). The library parsed
// the same bytes already.
bool unigram_model(std::string_view proto) {
  std::string_view trainer;
  bool has_trainer = false;
  for_each_field(proto, [&](uint64_t field, uint64_t, std::string_view bytes) {
    if (field == 2) trainer = bytes, has_trainer = true;
  });
  if (!has_trainer) return true;  // no trainer spec: the default, unigram
  int64_t type = -1;
  for_each_field(trainer, [&](uint64_t field, uint64_t value, std::string_view bytes) {
    if (field == 3 && bytes.empty()) type = static_cast<int64_t>(value);
  });
  return type == -1 || type == 1;
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_model(const nlohmann::json& config, const char* key) {
  KILN_CHECK(config.contains(key) && config[key].is_string(), "[tokenizer] sentencepiece: '{}' is missing", key);
  const std::string proto = base64_decode(config[key].get_ref<const std::string&>(), std::string("tokenizer ") + key);
  KILN_CHECK(pieces_have_text(proto),
             "[tokenizer] sentencepiece: {} is not a SentencePiece model (malformed, or a piece without text)", key);
  KILN_CHECK(normalizers_are_safe(proto), "[tokenizer] sentencepiece: {} has a corrupt normalisation map", key);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->LoadFromSerializedProto(proto);
  KILN_CHECK(status.ok(), "[tokenizer] sentencepiece: {} is not a SentencePiece model: {}", key, status.ToString());
  return sp;
}

// A unigram model's best segmentation, with exact ties going to the earlier split as
// sentencepiece 0.2 breaks them ("000" as "0" "00", "...." as "." "..."); Debian's 0.1.97, which
// kiln links, breaks them the other way. The library normalises and segments first; the
// normalised text (its pieces joined) is segmented again here by the same Viterbi search over
// the model's scores: float path sums, a character no piece covers as an unknown node scored
// the lowest piece score less 10, consecutive unknown characters joined into one piece.
class UnigramSegmenter {
 public:
  explicit UnigramSegmenter(const sentencepiece::SentencePieceProcessor& sp) {
    float lowest = 0;
    bool any = false;
    for (int id = 0; id < sp.GetPieceSize(); ++id) {
      if (sp.IsControl(id) || sp.IsUnknown(id) || sp.IsUnused(id) || sp.IsByte(id)) continue;
      const std::string piece = sp.IdToPiece(id);
      const float score = sp.GetScore(id);
      score_.emplace(piece, score);
      longest_ = std::max(longest_, piece.size());
      lowest = any ? std::min(lowest, score) : score;
      any = true;
    }
    unknown_score_ = lowest - 10.0f;
  }

  std::vector<std::string> segment(const std::vector<std::string>& library_pieces) const {
    std::string text;
    for (const auto& p : library_pieces) text += p;
    std::vector<size_t> at;  // character boundaries
    for (size_t b = 0; b < text.size(); ++b)
      if ((static_cast<uint8_t>(text[b]) & 0xC0) != 0x80) at.push_back(b);
    at.push_back(text.size());
    const size_t n = at.size() - 1;
    std::vector<float> best(n + 1, 0.0f);
    std::vector<int64_t> from(n + 1, -1);
    std::vector<bool> unknown(n + 1, false);  // the node ending there is an unknown character
    from[0] = 0;
    for (size_t i = 0; i < n; ++i) {
      if (from[i] < 0) continue;
      bool single = false;
      for (size_t j = i + 1; j <= n && at[j] - at[i] <= longest_; ++j) {
        const auto it = score_.find(text.substr(at[i], at[j] - at[i]));
        if (it == score_.end()) continue;
        single = single || j == i + 1;
        relax(best, from, unknown, i, j, it->second, false);
      }
      if (!single) relax(best, from, unknown, i, i + 1, unknown_score_, true);
    }
    std::vector<std::string> out;
    bool joined = false;  // the last piece out is unknown characters
    std::vector<std::pair<size_t, bool>> path;
    for (size_t j = n; j > 0; j = static_cast<size_t>(from[j])) path.emplace_back(j, unknown[j]);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const size_t j = it->first, i = static_cast<size_t>(from[j]);
      const std::string piece = text.substr(at[i], at[j] - at[i]);
      if (it->second && joined)
        out.back() += piece;
      else
        out.push_back(piece);
      joined = it->second;
    }
    return out;
  }

 private:
  // A node from i to j: taken when strictly better, so that ties keep the earlier start.
  static void relax(std::vector<float>& best, std::vector<int64_t>& from, std::vector<bool>& unknown, size_t i,
                    size_t j, float score, bool is_unknown) {
    const float candidate = best[i] + score;
    if (from[j] >= 0 && !(candidate > best[j])) return;
    best[j] = candidate;
    from[j] = static_cast<int64_t>(i);
    unknown[j] = is_unknown;
  }

  std::unordered_map<std::string, float> score_;
  size_t longest_ = 0;
  float unknown_score_ = 0;
};

class SentencePieceTokenizer : public TextTokenizer {
 public:
  explicit SentencePieceTokenizer(const nlohmann::json& c)
      : source_(load_model(c, "source_model")), target_(load_model(c, "target_model")) {
    if (unigram_model(source_->serialized_model_proto()))
      source_unigram_ = std::make_unique<UnigramSegmenter>(*source_);
    if (unigram_model(target_->serialized_model_proto()))
      target_unigram_ = std::make_unique<UnigramSegmenter>(*target_);
    KILN_CHECK(c.contains("vocab") && c["vocab"].is_object() && !c["vocab"].empty(),
               "[tokenizer] sentencepiece: 'vocab' must be a non-empty object");
    for (const auto& [piece, id] : c["vocab"].items()) {
      const int64_t i = json_int(id, 0, kMaxVocab - 1, "[tokenizer] vocab id of '" + piece + "'");
      vocab_.emplace(piece, i);
      KILN_CHECK(pieces_.emplace(i, piece).second, "[tokenizer] sentencepiece: two pieces have id {}", i);
    }
    eos_ = json_int(c.value("eos", nlohmann::json()), 0, kMaxVocab - 1, "[tokenizer] eos");
    unk_ = json_int(c.value("unk", nlohmann::json()), 0, kMaxVocab - 1, "[tokenizer] unk");
    for (int64_t id :
         json_ints(c.value("special_ids", nlohmann::json()), 64, 0, kMaxVocab - 1, "[tokenizer] special_ids"))
      special_.insert(id);
  }

  std::vector<int64_t> encode_source(std::string_view text, size_t max_tokens, bool* truncated) const override {
    std::vector<int64_t> ids = encode(*source_, source_unigram_.get(), text);
    *truncated = max_tokens >= 1 && ids.size() + 1 > max_tokens;
    if (*truncated) ids.resize(max_tokens - 1);
    ids.push_back(eos_);
    return ids;
  }

  std::vector<int64_t> encode_target(std::string_view text) const override {
    std::vector<int64_t> ids = encode(*target_, target_unigram_.get(), text);
    ids.push_back(eos_);
    return ids;
  }

  std::string decode(const std::vector<int64_t>& ids) const override {
    std::vector<std::string> pieces;
    for (int64_t id : ids) {
      if (special_.count(id)) continue;
      const auto it = pieces_.find(id);
      if (it != pieces_.end()) {
        pieces.push_back(it->second);
      } else {
        // Ids outside the vocabulary name the SentencePiece model's own pieces.
        KILN_CHECK(id >= 0 && id < source_->GetPieceSize(), "[tokenizer] id {} is outside the vocabulary", id);
        pieces.push_back(source_->IdToPiece(static_cast<int>(id)));
      }
    }
    // Pieces join with the source model (the two share one vocabulary); the word marker
    // U+2581 becomes a space and the ends are trimmed.
    std::string text;
    const auto status = source_->Decode(pieces, &text);
    KILN_CHECK(status.ok(), "[tokenizer] cannot decode: {}", status.ToString());
    std::string out;
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
        out += ' ';
        i += 3;
      } else {
        out += text[i++];
      }
    }
    const size_t begin = out.find_first_not_of(" \t\n\r\f\v"), end = out.find_last_not_of(" \t\n\r\f\v");
    return begin == std::string::npos ? std::string() : out.substr(begin, end - begin + 1);
  }

 private:
  std::vector<int64_t> encode(const sentencepiece::SentencePieceProcessor& sp, const UnigramSegmenter* unigram,
                              std::string_view text) const {
    KILN_CHECK(valid_utf8(text), "[tokenizer] the text is not valid UTF-8");
    std::vector<int64_t> ids;
    // A leading target-language code (">>deu<<") is one token, not pieces.
    if (text.substr(0, 2) == ">>") {
      const size_t end = text.find("<<");
      if (end != std::string_view::npos) {
        ids.push_back(id_of(std::string(text.substr(0, end + 2))));
        text.remove_prefix(end + 2);
      }
    }
    std::vector<std::string> pieces;
    const auto status = sp.Encode(text, &pieces);
    KILN_CHECK(status.ok(), "[tokenizer] cannot encode: {}", status.ToString());
    if (unigram) pieces = unigram->segment(pieces);
    for (const auto& p : pieces) ids.push_back(id_of(p));
    return ids;
  }

  // Pieces outside the vocabulary (characters the model has never seen) are <unk>.
  int64_t id_of(const std::string& piece) const {
    const auto it = vocab_.find(piece);
    return it != vocab_.end() ? it->second : unk_;
  }

  std::unique_ptr<sentencepiece::SentencePieceProcessor> source_, target_;
  std::unique_ptr<UnigramSegmenter> source_unigram_, target_unigram_;
  std::unordered_map<std::string, int64_t> vocab_;
  std::map<int64_t, std::string> pieces_;
  std::set<int64_t> special_;
  int64_t eos_ = 0, unk_ = 0;
};

}  // namespace

std::unique_ptr<TextTokenizer> make_sentencepiece_tokenizer(const nlohmann::json& config) {
  return std::make_unique<SentencePieceTokenizer>(config);
}

}  // namespace kiln
