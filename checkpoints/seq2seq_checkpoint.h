// Reading Hugging Face encoder-decoder checkpoints in the layout their seq2seq translation and
// summarization models share: the config keys (d_model, encoder_layers, ...), and the token
// embeddings, which real Hub files store under several names (model.shared.weight alone, or
// copies as model.encoder.embed_tokens.weight, model.decoder.embed_tokens.weight and
// lm_head.weight), plus final_logits_bias. Families add what differs (positions, norms).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "checkpoints/checkpoint.h"
#include "graph/encoder_decoder.h"

namespace kiln {

// Sizes, layer counts, heads and activation; capacities = max_position_embeddings. `who`
// prefixes errors ("[family] ...").
EncoderDecoderConfig read_encoder_decoder_config(const nlohmann::json& config, const std::string& who);

// The embeddings and output projection (tied when config.tie_word_embeddings, the default),
// and final_logits_bias when stored; `load` of the result reads the layers' tensors, checking
// each shape.
EncoderDecoderWeights read_encoder_decoder_embeddings(Checkpoint& ckpt, const EncoderDecoderConfig& c,
                                                      const std::string& who);

// A tensor the checkpoint must hold with this shape.
Tensor load_checked(Checkpoint& ckpt, const std::string& name, const Shape& shape, const std::string& who);

// Fails when config `key` is set (not null) to anything but `supported`: `what` names the
// feature that setting would need.
void reject_config(const nlohmann::json& config, const char* key, const nlohmann::json& supported, const char* what,
                   const std::string& who);

// The task settings a bundle's text generator reads (api/text_generator.cpp): graph, tokenizer,
// the checkpoint's generation settings (its generation_config.json over config.json's legacy
// keys), vocabulary size and capacities.
nlohmann::json encoder_decoder_task_config(const Checkpoint& ckpt, const EncoderDecoderConfig& c,
                                           nlohmann::json tokenizer, const std::string& who);

// Fails naming the first tensor the build left unread (an architecture feature kiln ignores
// would otherwise go unnoticed).
void require_all_used(const Checkpoint& ckpt, const std::string& who);

}  // namespace kiln
