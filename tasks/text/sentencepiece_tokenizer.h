// SentencePiece models with an outside vocabulary (vocab.json: piece -> model id), one model
// for the source language and one for the target, as Hugging Face's tokenizers for OPUS-MT
// translation models work: an optional leading ">>lang<<" code kept whole, pieces looked up in
// the vocabulary, </s> appended; decoding joins pieces back into text.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>

#include "tasks/text/tokenizer.h"

namespace kiln {

// config: {"type": "sentencepiece", "source_model": base64, "target_model": base64,
//          "vocab": {piece: id}, "eos": id, "unk": id, "special_ids": [ids skipped when decoding]}
std::unique_ptr<TextTokenizer> make_sentencepiece_tokenizer(const nlohmann::json& config);

}  // namespace kiln
