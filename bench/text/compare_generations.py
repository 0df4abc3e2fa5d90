# Agreement between two runs of `kiln translate|summarize --json` over the same sources (one
# JSON object a line: source, text, ids, score), e.g. an FP8 bundle against the fp16 one:
#   python3 bench/text/compare_generations.py fp16.jsonl fp8.jsonl [--label fp8-linear]
# Prints one JSON object: sources, identical outputs (fraction), token agreement (tokens equal at
# the same position over the longer output's length, summed over sources), and the mean score
# difference where the outputs differ.
import argparse, json, sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("candidate")
    p.add_argument("--label", default="")
    a = p.parse_args()
    ref, cand = load(a.reference), load(a.candidate)
    if len(ref) != len(cand):
        sys.exit(f"{a.reference} has {len(ref)} outputs, {a.candidate} {len(cand)}")
    identical = equal = total = 0
    margins = []
    for r, c in zip(ref, cand):
        if r["source"] != c["source"]:
            sys.exit(f"the runs differ in their sources: {r['source']!r} / {c['source']!r}")
        x, y = r["ids"], c["ids"]
        identical += x == y
        equal += sum(u == v for u, v in zip(x, y))
        total += max(len(x), len(y))
        if x != y:
            margins.append(c["score"] - r["score"])
    print(json.dumps({"label": a.label, "sources": len(ref), "identical": identical / len(ref),
                      "token_agreement": equal / total if total else 1.0,
                      "mean_score_change_where_different": sum(margins) / len(margins) if margins else 0.0}))


if __name__ == "__main__":
    main()
