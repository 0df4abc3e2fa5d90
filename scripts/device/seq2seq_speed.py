# Generation speed on one GPU, in one run: transformers (eager, fp32 and fp16) against kiln (an
# fp16 bundle), with a model of a real checkpoint's dimensions and random weights (a fixed
# seed), every output exactly NEW tokens long (min = max new tokens), on WMT22 English lines.
# Beam 4 at batch 32 (CTranslate2's protocol) over 256 sources, and greedy at batch 1 over 20.
#   python3 scripts/device/seq2seq_speed.py KILN STAGE OUT {opus-mt-en-de|bart-large-cnn}
# MODEL_ONLY=1 only writes the random checkpoint to /tmp/<model>-random; PEERS=0 times kiln alone.
# FP8_RECIPES="fp8-linear ..." also times FP8 bundles of those recipes (plans warm), each calibrated
# on FP8_CALIB (default 16) WMT22 lines 300 on (documents of three lines for BART), not timed.
# CPU_THREADS=N then times both on the CPU with N threads (an fp32 kiln bundle on the fast and
# on the reference kernels; transformers fp32 eager): beam 4 over CPU_SOURCES sources in one
# batch, greedy over 5 sources one by one.
import json, os, shutil, subprocess, sys, time

import torch
from transformers import (AutoTokenizer, BartConfig, BartForConditionalGeneration, GenerationConfig, MarianConfig,
                          MarianMTModel)

KILN, STAGE, OUT, WHICH = sys.argv[1:5]
NEW = int(os.environ.get("NEW", "64"))
torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
model_dir = f"/tmp/{WHICH}-random"
fixtures = f"{STAGE}/data/checkpoints"


def padded_vocab(path, size, last=None):
    """The fixture's vocabulary, filled up to `size` entries (ids the tokenizer never makes)."""
    vocab = json.load(open(path, encoding="utf-8"))
    taken = set(vocab.values())
    for i in range(size):
        if i not in taken and (last is None or i != size - 1):
            vocab[f"<unused_{i}>"] = i
    if last is not None:
        vocab.pop(last, None)
        vocab[last] = size - 1
    return vocab


if WHICH == "opus-mt-en-de":
    V, pad = 58101, 58100
    cfg = MarianConfig(vocab_size=V, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                       decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                       max_position_embeddings=512, pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad,
                       forced_eos_token_id=0, activation_function="swish", scale_embedding=True)
    model = MarianMTModel(cfg)
    model.generation_config = GenerationConfig(bad_words_ids=[[pad]], bos_token_id=0, decoder_start_token_id=pad,
                                               eos_token_id=0, forced_eos_token_id=0, max_length=512, num_beams=4,
                                               pad_token_id=pad)
    model.save_pretrained(model_dir)
    fx = f"{fixtures}/marian-tiny-en-de"
    for f in ("source.spm", "target.spm", "tokenizer_config.json"):
        shutil.copy(f"{fx}/{f}", model_dir)
    json.dump(padded_vocab(f"{fx}/vocab.json", V, "<pad>"), open(f"{model_dir}/vocab.json", "w"), ensure_ascii=False)
    kiln_command = "translate"
else:
    V = 50264
    cfg = BartConfig(vocab_size=V, d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
                     decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096,
                     max_position_embeddings=1024, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                     decoder_start_token_id=2, forced_bos_token_id=0, forced_eos_token_id=2,
                     activation_function="gelu", scale_embedding=False)
    model = BartForConditionalGeneration(cfg)
    model.generation_config = GenerationConfig(bos_token_id=0, eos_token_id=2, pad_token_id=1, decoder_start_token_id=2,
                                               forced_bos_token_id=0, forced_eos_token_id=2, num_beams=4,
                                               length_penalty=2.0, max_length=142, min_length=56,
                                               no_repeat_ngram_size=3, early_stopping=True)
    model.save_pretrained(model_dir)
    fx = f"{fixtures}/bart-tiny-lead"
    for f in ("merges.txt", "tokenizer_config.json"):
        shutil.copy(f"{fx}/{f}", model_dir)
    json.dump(padded_vocab(f"{fx}/vocab.json", V), open(f"{model_dir}/vocab.json", "w"), ensure_ascii=False)
    kiln_command = "summarize"

tok = AutoTokenizer.from_pretrained(model_dir)
if os.environ.get("MODEL_ONLY"):  # just write the random checkpoint (for profiling it)
    sys.exit(0)
lines = [l.rstrip("\n") for l in open(f"{STAGE}/data/data/text/wmt22.en-de.en", encoding="utf-8")]
beam_sources, greedy_sources = lines[:256], lines[256:276]
open("/tmp/beam.txt", "w").write("\n".join(beam_sources) + "\n")
open("/tmp/greedy.txt", "w").write("\n".join(greedy_sources) + "\n")
results = {"model": WHICH, "new_tokens": NEW, "gpu": torch.cuda.get_device_name(),
           "torch": torch.__version__}


def hf(dtype, sources, beams, batch, device="cuda"):
    m = MarianMTModel if WHICH == "opus-mt-en-de" else BartForConditionalGeneration
    net = m.from_pretrained(model_dir, torch_dtype=dtype).to(device).eval()

    def run(srcs):
        n = 0
        for i in range(0, len(srcs), batch):
            x = tok(srcs[i:i + batch], return_tensors="pt", padding=True, truncation=True).to(device)
            with torch.no_grad():
                y = net.generate(**x, num_beams=beams, max_new_tokens=NEW, min_new_tokens=NEW)
            n += y.shape[0] * NEW
        if device == "cuda":
            torch.cuda.synchronize()
        return n

    run(sources[:batch if device == "cuda" else 2])  # warm-up
    t = time.time()
    n = run(sources)
    s = time.time() - t
    del net
    torch.cuda.empty_cache()
    return n / s


def kiln(bundle, source_file, beams, batch, device="cuda", warmup=None, env=None):
    cmd = [KILN, "eval", bundle, "--source", source_file, "--target", source_file, "--beams", str(beams), "--batch",
           str(batch), "--max-new-tokens", str(NEW), "--min-new-tokens", str(NEW), "--device", device, "--json",
           "--warmup", str(batch if warmup is None else warmup)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().split("\n")[-1])["tokens_per_s"]


bundle = f"/tmp/{WHICH}-fp16.bundle"
t = time.time()
subprocess.run([KILN, "build", model_dir, "-o", bundle, "--precision", "fp16"], check=True, capture_output=True)
results["kiln_build_s"] = time.time() - t
# "plans warm": the timed lines were generated once before, so every size bucket they need has
# its engine plan (tuned kernels, captured graph) already, as in a long-running process.
runs = [("kiln fp16", lambda b, s, bs: kiln(bundle, s, b, bs)),
        ("kiln fp16 plans warm", lambda b, s, bs: kiln(bundle, s, b, bs, warmup=len(open(s).readlines()))),
        ("transformers fp32", lambda b, s, bs: hf(torch.float32, s, b, bs)),
        ("transformers fp16", lambda b, s, bs: hf(torch.float16, s, b, bs))]
if os.environ.get("PEERS") == "0":
    runs = runs[:2]
calib_lines = lines[300:300 + int(os.environ.get("FP8_CALIB", "16")) + 2]
if kiln_command == "summarize":
    calib_lines = [" ".join(calib_lines[i:i + 3]) for i in range(len(calib_lines) - 2)]
open("/tmp/calib.txt", "w").write("\n".join(calib_lines[:int(os.environ.get("FP8_CALIB", "16"))]) + "\n")
for recipe in os.environ.get("FP8_RECIPES", "").split():
    fp8_bundle = f"/tmp/{WHICH}-{recipe}.bundle"
    t = time.time()
    subprocess.run([KILN, "build", model_dir, "-o", fp8_bundle, "--precision", "fp8", "--recipe", recipe, "--calib",
                    "/tmp/calib.txt"], check=True, capture_output=True)
    results[f"kiln_{recipe}_build_s"] = time.time() - t
    runs.append((f"kiln {recipe} plans warm",
                 lambda b, s, bs, f=fp8_bundle: kiln(f, s, b, bs, warmup=len(open(s).readlines()))))
for label, fn in runs:
    beam = fn(4, "/tmp/beam.txt" if label.startswith("kiln") else beam_sources, 32)
    greedy = fn(1, "/tmp/greedy.txt" if label.startswith("kiln") else greedy_sources, 1)
    results[label] = {"beam4_batch32_tokens_per_s": beam, "greedy_batch1_ms_per_token": 1000 / greedy}
    print(f"{WHICH} {label}: beam 4 batch 32 {beam:.0f} tokens/s; greedy batch 1 {1000 / greedy:.3f} ms/token",
          flush=True)
threads = int(os.environ.get("CPU_THREADS", "0"))
if threads:
    cpu_sources = int(os.environ.get("CPU_SOURCES", "32"))
    open("/tmp/cpu_beam.txt", "w").write("\n".join(beam_sources[:cpu_sources]) + "\n")
    open("/tmp/cpu_greedy.txt", "w").write("\n".join(greedy_sources[:5]) + "\n")
    cpu_bundle = f"/tmp/{WHICH}-fp32.bundle"
    subprocess.run([KILN, "build", model_dir, "-o", cpu_bundle], check=True, capture_output=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    torch.set_num_threads(threads)
    for label, beam_fn, greedy_fn in [
        (f"kiln fp32 cpu {threads} threads", lambda: kiln(cpu_bundle, "/tmp/cpu_beam.txt", 4, cpu_sources, "cpu", 0, env),
         lambda: kiln(cpu_bundle, "/tmp/cpu_greedy.txt", 1, 1, "cpu", 1, env)),
        (f"kiln fp32 cpu-reference {threads} threads",
         lambda: kiln(cpu_bundle, "/tmp/cpu_beam.txt", 4, cpu_sources, "cpu-reference", 0, env),
         lambda: kiln(cpu_bundle, "/tmp/cpu_greedy.txt", 1, 1, "cpu-reference", 1, env)),
        (f"transformers fp32 cpu {threads} threads", lambda: hf(torch.float32, beam_sources[:cpu_sources], 4,
                                                                cpu_sources, "cpu"),
         lambda: hf(torch.float32, greedy_sources[:5], 1, 1, "cpu"))]:
        beam, greedy = beam_fn(), greedy_fn()
        results[label] = {f"beam4_batch{cpu_sources}_tokens_per_s": beam, "greedy_batch1_ms_per_token": 1000 / greedy}
        print(f"{WHICH} {label}: beam 4 batch {cpu_sources} {beam:.1f} tokens/s; greedy batch 1 "
              f"{1000 / greedy:.2f} ms/token", flush=True)
json.dump(results, open(f"{OUT}/{WHICH}-speed.json", "w"), indent=1)
