#!/usr/bin/env bash
# Prepared GPU session for vLLM (docs/getting-started/gpus.md), run from the repository root with the
# carried folder .vllm/: stage "tests" (install, import, GPU tests), "bench" or "both";
# then the tests' and the benchmark's time limits in seconds, and more benchmark flags
# (e.g. --vllm-compiled).
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false VLLM_USE_FLASHINFER_SAMPLER=0  # flashinfer not carried
t0=$(date +%s); stamp() { echo "== $1 at +$(( $(date +%s) - t0 ))s"; }
export PYTHONPATH=/tmp/site:$PWD ROLLENV_CACHE=$PWD/.vllm/cache
if [ ! -d /tmp/site/vllm ]; then
  stamp install
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .vllm/wheels/*.whl > $OUT/install.log 2>&1 || { tail -5 $OUT/install.log; exit 1; }
  tar xJf .vllm/vllm-stripped.tar.xz -C /tmp/site || exit 1
else
  stamp "already installed"
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >> $OUT/install.log 2>&1 || echo "editable install failed"
stamp import
timeout 150 python3 -c "
import torch, transformers, vllm
print('torch', torch.__version__, 'transformers', transformers.__version__, 'vllm', vllm.__version__, torch.cuda.get_device_name())
from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
print('import ok')
" > $OUT/import.log 2>&1; rc=$?; tail -15 $OUT/import.log; [ $rc = 0 ] || exit 3
if [ "$1" = tests ] || [ "$1" = both ]; then
  stamp tests
  # pytest-timeout (in the machine's image) fails a hung test with its traceback, so pytest
  # still prints every failure before the outer limit; 2026-11-28's run lost them to it
  timeout ${2:-330} python3 -m pytest -q -p no:cacheprovider -m gpu -rA --timeout 150 --durations=0 tests/trainer/generation/test_gpu_engines.py -k vllm > $OUT/tests.log 2>&1; echo "rc=$?" >> $OUT/tests.log
  grep -E "passed|failed|error|PASSED|FAILED|ERROR|SKIPPED|^E " $OUT/tests.log | head -40
fi
if [ "$1" = bench ] || [ "$1" = both ]; then
  stamp bench
  timeout ${3:-300} python3 benchmarks/generation_gpu.py --random-weights .vllm/smol --dtypes bfloat16,float32 --vllm-attention TRITON_ATTN --episodes 64 --batch-size 64 --repeats 2 ${4:-} --json $OUT/generation_gpu.json > $OUT/bench.log 2>&1; echo "rc=$?" >> $OUT/bench.log
  grep -v "^INFO\|^(EngineCore" $OUT/bench.log | tail -30
fi
stamp done
