# Compares kiln's token ids (pack.sh STAGE s wrote them with `kiln tokenize`) with transformers'
# tokenizers loaded from the same checkpoints, for every line of the WMT22 files, source side
# (tokenizer(text)) and target side (tokenizer(text_target=text)). Prints one summary line per
# file and side, and the first differences.
#   python3 scripts/device/check_tokenizers.py STAGE
import glob, os, sys

from transformers import AutoTokenizer

stage = sys.argv[1]
total_bad = 0
for ckpt in sorted(glob.glob(f"{stage}/data/checkpoints/*")):
    name = os.path.basename(ckpt)
    if not glob.glob(f"{stage}/tokens/{name}.*"):
        continue
    tok = AutoTokenizer.from_pretrained(ckpt)
    for text in sorted(glob.glob(f"{stage}/data/data/text/wmt22.*")):
        lines = open(text, encoding="utf-8").read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for side in ("source", "target"):
            ours = open(f"{stage}/tokens/{name}.{os.path.basename(text)}.{side}").read().split("\n")[: len(lines)]
            bad = []
            for i, line in enumerate(lines):
                ref = tok(line)["input_ids"] if side == "source" else tok(text_target=line)["input_ids"]
                got = [int(x) for x in ours[i].split()] if i < len(ours) else None
                if got != ref:
                    bad.append((i, ref, got))
            total_bad += len(bad)
            print(f"{name} {os.path.basename(text)} {side}: {len(lines) - len(bad)}/{len(lines)} lines identical",
                  flush=True)
            for i, ref, got in bad[:3]:
                at = next((k for k in range(min(len(ref), len(got or []))) if ref[k] != got[k]), 0)
                print(f"  line {i + 1}: {lines[i][:80]!r}\n    from token {at}: transformers "
                      f"{tok.convert_ids_to_tokens(ref[at:at + 6])} kiln {tok.convert_ids_to_tokens((got or [])[at:at + 6])}")
print("tokenizers: all identical" if total_bad == 0 else f"tokenizers: {total_bad} lines differ")
