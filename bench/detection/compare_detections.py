# Agreement between two runs of `kiln detect --json` over the same images (one JSON object a
# line: image, detections with box, score, class), e.g. an FP8 bundle against the fp32 one:
#   python3 bench/detection/compare_detections.py fp32.jsonl fp8.jsonl [--label fp8-pointwise] [--top 100]
# Per image, the reference's best `top` detections are matched greedily, best first, to the
# candidate's unmatched detection of the same class with the highest IoU (at least 0.9). Prints
# one JSON object: images, matched fraction, max and mean |score difference| of the matches, max
# |difference| of the sorted scores (all detections, whatever their order), and how many
# detections each run has above 0.25.
import argparse, json, sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("candidate")
    p.add_argument("--label", default="")
    p.add_argument("--top", type=int, default=100)
    a = p.parse_args()
    ref, cand = load(a.reference), load(a.candidate)
    if len(ref) != len(cand):
        sys.exit(f"{a.reference} has {len(ref)} images, {a.candidate} {len(cand)}")
    matched = wanted = 0
    diffs, sorted_diff = [], 0.0
    above = [0, 0]
    for r, c in zip(ref, cand):
        if r["image"] != c["image"]:
            sys.exit(f"the runs differ in their images: {r['image']} / {c['image']}")
        rd, cd = r["detections"], c["detections"]
        above[0] += sum(d["score"] > 0.25 for d in rd)
        above[1] += sum(d["score"] > 0.25 for d in cd)
        for x, y in zip(sorted((d["score"] for d in rd), reverse=True), sorted((d["score"] for d in cd), reverse=True)):
            sorted_diff = max(sorted_diff, abs(x - y))
        taken = [False] * len(cd)
        for d in sorted(rd, key=lambda d: -d["score"])[:a.top]:
            wanted += 1
            best, at = 0.9, -1
            for j, e in enumerate(cd):
                if not taken[j] and e["class"] == d["class"]:
                    v = iou(d["box"], e["box"])
                    if v >= best:
                        best, at = v, j
            if at >= 0:
                taken[at] = True
                matched += 1
                diffs.append(abs(d["score"] - cd[at]["score"]))
    print(json.dumps({"label": a.label, "images": len(ref), "top": a.top, "matched": matched / max(wanted, 1),
                      "max_score_diff": max(diffs, default=0.0), "mean_score_diff": sum(diffs) / max(len(diffs), 1),
                      "max_sorted_score_diff": sorted_diff, "above_0.25": {"reference": above[0],
                                                                            "candidate": above[1]}}))


if __name__ == "__main__":
    main()
