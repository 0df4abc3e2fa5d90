// The graphs of a transformer encoder-decoder in the module layout Hugging Face's seq2seq
// translation and summarization models share ("model.encoder.layers.N.self_attn.q_proj",
// "model.decoder.layers.N.encoder_attn", "fc1", "final_layer_norm", ...). Families read their
// config and resolve their embeddings and positions; this builds the graphs a generator runs:
//
//   encoder       ids [batch, source] i64, positions [source] i64 (0, 1, ...), length [batch]
//                 i64 (real tokens per source, the rest padding), slots [slots] i64,
//                 memory_capacity [memory] -> hidden [batch, source, d]; and for each slot s
//                 with slots[s] >= 0, the cross-attention keys and values of source slots[s]
//                 written into the states cross_k.<l>, cross_v.<l> [slots, heads, memory, head
//                 dim]: computed once per source, not per step, and held once for all its beams.
//   decoder_step  ids [rows, 1] i64, position [rows] i64 (each row's step), length [rows] i64
//                 (position + 1), source_length [rows] i64, cache_rows [rows, cache] i32,
//                 cross_rows [rows, memory] i32, slot_capacity [slots], cache_capacity [cache]
//                 -> logits [rows, vocab] (f32); the step's keys and values are written into the
//                 states k.<l>, v.<l> [rows, heads, cache, head dim] at each row's position, and
//                 row r's self-attention reads position j from cache row cache_rows[r, j]
//                 (attention's kv_rows). A row's own step is in its own cache row
//                 (cache_rows[r, position[r]] = r); beam search rewrites the table for the
//                 earlier positions, so that reordering beams moves a few integers instead of
//                 every layer's cache. Row r's cross-attention reads the keys and values of slot
//                 cross_rows[r, j] (its source's slot at every position j).
//   The lengths of memory_capacity, slot_capacity and cache_capacity (their values are not
//   read; in the decoder, cross_rows' second dim stands for memory_capacity) size the caches: a
//   generator passes its slots, longest source and longest output, so that the caches cost what
//   the call needs, not the model's maximum.
//   decoder_topk  the decoder step with banned [rows, B] i64 (tokens to exclude, -1 padding)
//                 -> scores, tokens [rows, kEncoderDecoderTopK]: each row's best tokens by
//                 log-probability (f32, computed on the device) after the bans, so that a
//                 generator reads a few numbers per row instead of the vocabulary's logits.
//
// Slots hold the sources being decoded and rows their beams (slots times beams), so that a batch
// can refill a finished source's slot with a new source while the others keep decoding.
#pragma once

#include <functional>
#include <string>

#include "core/tensor.h"
#include "graph/model_definition.h"
#include "graph/ops/activation.h"

namespace kiln {

// Candidates per row that decoder_topk returns: enough for beam search with up to 8 beams
// (which keeps the best 2 x beams continuations).
inline constexpr int64_t kEncoderDecoderTopK = 16;

struct EncoderDecoderConfig {
  int64_t d_model = 0, vocab = 0;
  int encoder_layers = 0, decoder_layers = 0, encoder_heads = 0, decoder_heads = 0;
  int64_t encoder_ffn = 0, decoder_ffn = 0;
  int64_t source_capacity = 0;  // longest source (tokens)
  int64_t target_capacity = 0;  // longest decoded sequence, start token included
  Activation act = Activation::Gelu;
  float embed_scale = 1.0f;     // token embeddings times this (sqrt(d_model) where scale_embedding)
  bool embedding_norm = false;  // a layer norm after embeddings + positions ("layernorm_embedding")
  bool pre_norm = false;        // layer norm before each block and after the last layer
  double eps = 1e-5;
};

// A weight and the name it gets in the bundle: tied weights share one name, and so one tensor.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct EncoderDecoderWeights {
  NamedTensor encoder_embed, decoder_embed;          // [vocab, d]
  NamedTensor encoder_positions, decoder_positions;  // [capacity or more, d]: row p is position p
  NamedTensor lm_head;                               // [vocab, d]
  NamedTensor logits_bias;                           // [vocab], or an empty tensor for none
  // The layers' tensors by their module names ("model.encoder.layers.0.fc1.weight"), with the
  // shape the architecture needs (the family checks it).
  std::function<Tensor(const std::string& name, const Shape& shape)> load;
};

// Adds the graphs "encoder", "decoder_step" and "decoder_topk" to def.
void build_encoder_decoder(ModelDefinition& def, const EncoderDecoderConfig& config,
                           const EncoderDecoderWeights& weights);

}  // namespace kiln
