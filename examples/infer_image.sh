#!/usr/bin/env bash
# Classifies or detects one image through `kiln serve` with curl: the image goes as a BYTES tensor
# in Triton's binary tensor extension (a JSON header, then the image's length as 4 little-endian
# bytes and the image itself), so the client does no preprocessing.
#   examples/infer_image.sh http://127.0.0.1:8000 MODEL IMAGE [TOP]
# TOP (default 5) asks a classifier for its best TOP classes as "probability:index:label".
set -euo pipefail
url=${1:?usage: infer_image.sh URL MODEL IMAGE [TOP]}
model=${2:?usage: infer_image.sh URL MODEL IMAGE [TOP]}
image=${3:?usage: infer_image.sh URL MODEL IMAGE [TOP]}
top=${4:-5}
size=$(stat -c %s "$image")
platform=$(curl -sf "$url/v2/models/$model" | grep -o '"platform":"[a-z_]*"' || true)
outputs=""
[ "$platform" = '"platform":"kiln_image_classification"' ] &&
  outputs=",\"outputs\":[{\"name\":\"probabilities\",\"parameters\":{\"classification\":$top}}]"
header="{\"inputs\":[{\"name\":\"image\",\"datatype\":\"BYTES\",\"shape\":[1],\"parameters\":{\"binary_data_size\":$((size + 4))}}]$outputs}"
length=$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((size & 255)) $(((size >> 8) & 255)) $(((size >> 16) & 255)) $((size >> 24)))
{ printf '%s' "$header"; printf "$length"; cat "$image"; } |
  curl -sS --fail-with-body -X POST "$url/v2/models/$model/infer" --data-binary @- \
    -H 'Content-Type: application/octet-stream' -H "Inference-Header-Content-Length: ${#header}"
echo
