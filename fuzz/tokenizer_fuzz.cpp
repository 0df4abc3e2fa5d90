// libFuzzer target for the tokenizers a bundle carries (untrusted: their settings come from the
// manifest). The first byte picks what the rest is:
//   0: text for a small byte-level BPE tokenizer; valid UTF-8 must come back unchanged from
//      decode(encode(text)), and decoding arbitrary ids must fail cleanly or succeed;
//   1: a tokenizer config as JSON (make_tokenizer), then a short text through it;
//   2: a SentencePiece model proto (both sides of a config), then texts with ties and unknowns.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/base64.h"
#include "core/error.h"
#include "tasks/text/tokenizer.h"

namespace {

const kiln::TextTokenizer& byte_bpe() {
  static const auto t = [] {
    nlohmann::json vocab = nlohmann::json::object();
    // GPT-2's byte alphabet: bytes 33-126, 161-172, 174-255 as themselves, the rest from 256 on.
    int next = 256, id = 0;
    for (int b = 0; b < 256; ++b) {
      const bool self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      const int cp = self ? b : next++;
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
      vocab[s] = id++;
    }
    for (const char* merged : {"\xC4\xA0t", "he", "\xC4\xA0the", "in", "00"}) vocab[merged] = id++;
    for (const char* special : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) vocab[special] = id++;
    const nlohmann::json config = {{"type", "byte_bpe"},
                                   {"vocab", vocab},
                                   {"merges", {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "i n", "0 0"}},
                                   {"added", {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}},
                                   {"add_prefix_space", false},
                                   {"bos", vocab["<s>"]},
                                   {"eos", vocab["</s>"]},
                                   {"special_ids", {vocab["<s>"], vocab["<pad>"], vocab["</s>"]}}};
    return kiln::make_tokenizer(config);
  }();
  return *t;
}

void round_trip(const std::string& text) {
  const kiln::TextTokenizer& t = byte_bpe();
  if (kiln::valid_utf8(text)) {
    const std::vector<int64_t> ids = t.encode_target(text);
    // encode_target wraps the text in <s> ... </s>, which decoding skips.
    if (t.decode(ids) != text && text.find('<') == std::string::npos) std::abort();
  }
  std::vector<int64_t> ids;
  for (size_t i = 0; i + 1 < text.size(); i += 2)
    ids.push_back((static_cast<uint8_t>(text[i]) << 8 | static_cast<uint8_t>(text[i + 1])) % 300);
  try {
    t.decode(ids);
  } catch (const kiln::Error&) {
  }
}

void exercise(const kiln::TextTokenizer& t) {
  for (const char* text : {"hello world",
                           "levels are \xC2\xA3"
                           "1000 and 2500....",
                           "", "\xD0\xAF \xE2\x82\xAC !"}) {
    bool cut = false;
    t.encode_source(text, 16, &cut);
    t.decode(t.encode_target(text));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0:
        round_trip(rest);
        break;
      case 1: {
        const nlohmann::json config = nlohmann::json::parse(rest, nullptr, false);
        if (!config.is_discarded()) exercise(*kiln::make_tokenizer(config));
        break;
      }
      default: {
        const std::string model = kiln::base64_encode(rest);
        const nlohmann::json config = {{"type", "sentencepiece"},
                                       {"source_model", model},
                                       {"target_model", model},
                                       {"vocab", {{"</s>", 0}, {"<unk>", 1}}},
                                       {"eos", 0},
                                       {"unk", 1},
                                       {"special_ids", {0, 1}}};
        exercise(*kiln::make_tokenizer(config));
      }
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
