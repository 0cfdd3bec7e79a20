#!/bin/sh
# Prepares the tests' real engine in DIR (the build tree's tests/engine): node-llama-cpp, pinned,
# with llama.cpp's prebuilt CPU binaries inside its npm package (optional dependencies and
# install scripts left out, so nothing else is fetched, now or at run time); the server shim; and
# two GGUF models with random weights, a ~47M-parameter target and a ~4M-parameter small one.
# A second run installs and writes nothing. Without Node.js 20 it prepares nothing and says so;
# the engine tests then skip with that reason.
set -eu
dir=$1
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
  echo "engine: not prepared: node-llama-cpp 3.21.1 needs Node.js 20 or newer (found: $(node --version 2>/dev/null || echo none))"
  exit 0
fi
if ! cmp -s "$src/package.json" "$dir/package.json" || [ ! -f "$dir/node_modules/@node-llama-cpp/linux-x64/package.json" ]; then
  cp "$src/package.json" "$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --no-package-lock --omit=optional --ignore-scripts)
fi
cp "$src/shim.mjs" "$dir/shim.mjs"  # beside its node_modules, where an ES module import finds them
[ -f "$dir/target.gguf" ] || python3 "$src/make_gguf.py" "$dir/target.gguf" --name Qwen2.5-7B-Instruct \
  --embd 640 --layers 10 --ff 1728 --heads 10 --kv-heads 5
[ -f "$dir/small.gguf" ] || python3 "$src/make_gguf.py" "$dir/small.gguf" --name Qwen2.5-0.5B-Instruct \
  --embd 256 --layers 4 --ff 768 --heads 4
echo "engine: ready in $dir"
