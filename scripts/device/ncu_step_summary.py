# Per-kernel durations of one decoder step from an Nsight Compute CSV
# (`ncu --csv --metrics gpu__time_duration.sum kiln bench ... --graph decoder_topk`): the kernels
# of the last whole step (after the second-to-last top-k kernel up to the last one), summed by
# kernel, grid and block, longest first. ncu runs kernels one at a time, so these are each
# kernel's time alone; a replayed step overlaps a kernel's start with its predecessor's end.
#   python3 scripts/device/ncu_step_summary.py ncu.csv
import collections
import csv
import sys

header, rows = None, []
for r in csv.reader(open(sys.argv[1], newline="")):
    if r and r[0] == "ID":
        header = r
    elif header and len(r) == len(header):
        rows.append(dict(zip(header, r)))
ends = [i for i, r in enumerate(rows) if "topk" in r["Kernel Name"]]
if len(ends) < 2:
    sys.exit("fewer than two top-k kernels: no whole step in the file")
step = rows[ends[-2] + 1:ends[-1] + 1]
totals = collections.defaultdict(lambda: [0, 0.0])
for r in step:
    if r["Metric Unit"] != "ns":
        sys.exit(f"durations in {r['Metric Unit']}, not ns")
    key = f'{r["Kernel Name"][:96]} grid {r["Grid Size"]} block {r["Block Size"]}'
    totals[key][0] += 1
    totals[key][1] += float(r["Metric Value"].replace(",", "")) / 1000
print(f"{len(step)} kernels, {sum(t for _, t in totals.values()):.1f} us one at a time")
print(f"{'n':>3} {'us':>8} {'us each':>8}  kernel")
for key, (n, t) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
    print(f"{n:3d} {t:8.2f} {t / n:8.2f}  {key}")
