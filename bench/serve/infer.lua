-- wrk script: POSTs one image to /v2/models/<model>/infer with the binary tensor extension and
-- counts the answers by status. Environment: KILN_MODEL (default b0), KILN_IMAGE.
local model = os.getenv("KILN_MODEL") or "b0"
local f = assert(io.open(os.getenv("KILN_IMAGE"), "rb"))
local image = f:read("*a")
f:close()
local n = #image
local header = string.format(
  '{"inputs":[{"name":"image","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":%d}}],' ..
  '"outputs":[{"name":"probabilities","parameters":{"classification":1}}]}', n + 4)
local length = string.char(n % 256, math.floor(n / 256) % 256, math.floor(n / 65536) % 256, math.floor(n / 16777216))
wrk.method = "POST"
wrk.path = "/v2/models/" .. model .. "/infer"
wrk.body = header .. length .. image
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = tostring(#header)

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
function init()
  statuses = {}
end
function response(status)
  statuses[status] = (statuses[status] or 0) + 1
end
function done(summary, latency)
  local all = {}
  for _, t in ipairs(threads) do
    for status, count in pairs(t:get("statuses")) do all[status] = (all[status] or 0) + count end
  end
  for status, count in pairs(all) do io.write(string.format("status %d: %d\n", status, count)) end
  io.write(string.format("p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms\n", latency:percentile(50) / 1000,
    latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
