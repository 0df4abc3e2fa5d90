// Times an ONNX image classifier (NCHW fp32 input "pixels") in ONNX Runtime through its Node.js
// binding, for machines without its Python package. Each call timed alone after warm-up calls;
// median, p10, p90 and min in ms, one JSON object per batch size on stdout.
//   npm install --ignore-scripts onnxruntime-node     (the CPU build ships in the package)
//   node onnxruntime_node.mjs MODEL.onnx --threads 2 --batch 1,8 [--size 224] [--samples 30] [--warmup 5]
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ort = require("onnxruntime-node");

const args = process.argv.slice(2);
const model = args[0];
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const threads = Number(opt("threads", "2"));
const batches = opt("batch", "1,8").split(",").map(Number);
const size = Number(opt("size", "224"));
const samples = Number(opt("samples", "30"));
const warmup = Number(opt("warmup", "5"));

const session = await ort.InferenceSession.create(model, {
  executionProviders: ["cpu"],
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  executionMode: "sequential",
  graphOptimizationLevel: "all",
});
let seed = 1;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
for (const batch of batches) {
  const data = Float32Array.from({ length: batch * 3 * size * size }, random);
  const feeds = { [session.inputNames[0]]: new ort.Tensor("float32", data, [batch, 3, size, size]) };
  for (let i = 0; i < warmup; ++i) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < samples; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const pick = (q) => ms[Math.min(ms.length - 1, Math.round(q * (ms.length - 1)))];
  console.log(JSON.stringify({ peer: "onnxruntime-node", version: ort.env.versions?.common ?? "", threads, batch,
    median_ms: pick(0.5), p10_ms: pick(0.1), p90_ms: pick(0.9), min_ms: ms[0] }));
}
