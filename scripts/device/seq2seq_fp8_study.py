# The FP8 study of the encoder-decoder families on their fixtures (marian-tiny-en-de,
# bart-tiny-lead), on one GPU: fp16 and FP8 bundles of each recipe against the fp32 bundle on the
# CPU, beam search (the checkpoint's generation config) and greedy, on text neither the training
# nor the calibration saw (WMT22 en-de lines 1800-2036; BART: documents of three lines from 1800,
# each summarised by its first line). Calibration: CALIB (default 256) training lines from line 0
# (BART: documents). BLEU and chrF by sacreBLEU (default tokenisation) against WMT22's reference
# (BART: the document's first line). Prints one JSON object per bundle and writes them all to
# OUT/fp8-study.json.
#   python3 scripts/device/seq2seq_fp8_study.py KILN STAGE OUT [recipe ...]
import json, os, subprocess, sys

import sacrebleu

KILN, STAGE, OUT = sys.argv[1:4]
RECIPES = sys.argv[4:] or ["fp8-linear", "fp8-ffn", "fp8-linear-p9999", "fp8-all"]
CALIB = int(os.environ.get("CALIB", "256"))
HERE = os.path.dirname(os.path.abspath(__file__))
en = [l.rstrip("\n") for l in open(f"{STAGE}/data/data/text/wmt22.en-de.en", encoding="utf-8")]
de = [l.rstrip("\n") for l in open(f"{STAGE}/data/data/text/wmt22.en-de.de", encoding="utf-8")]
docs = [" ".join(en[i:i + 3]) for i in range(len(en) - 3)]
fixtures = {
    "marian-tiny-en-de": ("translate", en[:CALIB], en[1800:], de[1800:]),
    "bart-tiny-lead": ("summarize", docs[:CALIB], docs[1800:], en[1800:len(docs)]),
}


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def run(args):
    return subprocess.run([KILN] + args, check=True, capture_output=True, text=True).stdout


def compare(a, b):
    out = subprocess.run([sys.executable, f"{HERE}/../../bench/text/compare_generations.py", a, b], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


results = []
for name, (command, calib, sources, refs) in fixtures.items():
    work = f"/tmp/fp8-study/{name}"
    os.makedirs(work, exist_ok=True)
    write(f"{work}/calib.txt", calib)
    write(f"{work}/src.txt", sources)
    write(f"{work}/ref.txt", refs)
    ckpt = f"{STAGE}/data/checkpoints/{name}"
    bundles = {"fp32 cpu": (f"{work}/fp32.bundle", ["--precision", "fp32"], "cpu"),
               "fp16": (f"{work}/fp16.bundle", ["--precision", "fp16"], "cuda")}
    for r in RECIPES:
        bundles[r] = (f"{work}/{r}.bundle",
                      ["--precision", "fp8", "--recipe", r, "--calib", f"{work}/calib.txt", "--calib-samples",
                       str(len(calib))], "cuda")
    for label, (path, flags, device) in bundles.items():
        run(["build", ckpt, "-o", path] + flags)
        row = {"model": name, "bundle": label, "bytes": os.path.getsize(path)}
        for mode, extra in (("beam", []), ("greedy", ["--beams", "1"])):
            out = f"{work}/{label.replace(' ', '-')}.{mode}.jsonl"
            with open(out, "w") as f:
                f.write(run([command, path, "--input", f"{work}/src.txt", "--json", "--device", device,
                             "--batch", "32"] + extra))
            hyps = [json.loads(l)["text"] for l in open(out, encoding="utf-8")]
            row[mode] = {"bleu": sacrebleu.corpus_bleu(hyps, [refs]).score,
                         "chrf": sacrebleu.corpus_chrf(hyps, [refs]).score,
                         "vs_fp32": compare(f"{work}/fp32-cpu.{mode}.jsonl", out),
                         "vs_fp16": compare(f"{work}/fp16.{mode}.jsonl", out) if label != "fp32 cpu" else None}
        print(json.dumps(row), flush=True)
        results.append(row)
json.dump(results, open(f"{OUT}/fp8-study.json", "w"), indent=1)
