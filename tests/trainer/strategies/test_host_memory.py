"""``return_freed_tensors_to_os`` and ``train.return_freed_memory``: freed tensors leave the
resident set. Each case runs in a fresh process (the setting holds for a whole process, so it
is never made in the test process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainer.strategies.host_memory import glibc_malloc

pytestmark = pytest.mark.skipif(
    not glibc_malloc(),
    reason="glibc's mallopt only (the setting does nothing elsewhere)",
)

#: Frees 31 tensors of 4 MiB while the one allocated last stays, and prints the MB that left
#: the resident set. A heap cannot shrink below its topmost chunk, so what leaves it is what
#: had mappings of its own (with the setting, all but those that reused a free hole the heap
#: already had: a few after loading a model).
FREE_31_TENSORS = """
import torch
def resident_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
big = torch.ones(20 << 18)  # 20 MiB, mapped; freeing it raises glibc's moving threshold
del big
tensors = [torch.ones(1 << 20) for _ in range(32)]  # 32 x 4 MiB
before = resident_mb()
last = tensors.pop()
del tensors
print(before - resident_mb())
"""
FREED_MB = 31 * 4

SET_DIRECTLY = """
from trainer.strategies.host_memory import return_freed_tensors_to_os
assert return_freed_tensors_to_os()
"""

SET_BY_CONFIG = """
from trainer.config import load_config
from trainer.models import load_model
from trainer.strategies.from_config import build_strategy
config = load_config(None, ["model.name=tiny-random", "train.return_freed_memory={setting}"])
model, tokenizer = load_model("tiny-random", seed=0)
build_strategy(config, model, tokenizer.pad_token_id)
"""


def _freed_mb(setup: str) -> int:
    run = subprocess.run(
        [sys.executable, "-c", setup + FREE_31_TENSORS], capture_output=True, text=True, check=True
    )
    return int(run.stdout.split()[-1])


def test_freed_tensors_leave_the_resident_set_once_the_threshold_is_fixed():
    assert _freed_mb(SET_DIRECTLY) >= FREED_MB * 0.9


def test_by_default_glibc_keeps_them_after_a_large_free():
    # the waste the setting removes, on the same allocations
    assert _freed_mb("") < FREED_MB * 0.25


@pytest.mark.parametrize(("setting", "returned"), [("true", True), ("false", False)])
def test_a_configs_torch_strategy_follows_train_return_freed_memory(setting, returned):
    freed = _freed_mb(SET_BY_CONFIG.format(setting=setting))
    assert (freed >= FREED_MB * 0.6) if returned else (freed < FREED_MB * 0.25)
