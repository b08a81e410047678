"""``plan_serving``: the KV cache and limits ``roll-agent serve`` chooses before it loads
anything more, worked out by hand for SmolLM2-135M, and one clear line for each config that
cannot fit."""

from __future__ import annotations

import pytest

from trainer.serving.plan import DEFAULT_MAX_NUM_SEQS, ServePlanError, parse_memory, plan_serving

# SmolLM2-135M: 30 layers, 9 query heads sharing 3 key/value heads of 64, width 576, MLP 1536
SMOLLM2 = dict(
    layers=30,
    kv_heads=3,
    head_dim=64,
    heads=9,
    hidden=576,
    intermediate=1536,
    vocab=49152,
    model_context=8192,
    weight_bytes=269_060_352,
)


def _plan(**overrides):
    options = dict(SMOLLM2, dtype_bytes=2, max_model_len=None, max_num_seqs=None,
                   kv_cache_memory=6 * 10**9, max_step_tokens=512)  # fmt: skip
    options.update(overrides)
    return plan_serving(**options)


def test_the_cache_is_rows_times_context_times_bytes_a_token():
    plan = _plan()
    # keys and values, 30 layers x 3 heads x 64 x 2 bytes each, and the token id's 8 bytes
    assert plan.bytes_per_token == 2 * 30 * 3 * 64 * 2 + 8 == 23_048
    # 6 GB / (8192 x 23,048 B) = 31.78 rows, one of them to admit into: 30 sequences
    assert (plan.max_model_len, plan.max_num_seqs, plan.cache_rows) == (8192, 30, 31)
    assert plan.lowered_max_num_seqs
    assert plan.kv_cache_bytes == 31 * 8192 * 23_048 <= 6 * 10**9
    assert "--max-num-seqs lowered from 64 to 30" in plan.describe(10**9)


def test_a_shorter_context_fits_the_default_number_of_sequences():
    plan = _plan(max_model_len=2048)
    assert plan.max_num_seqs == DEFAULT_MAX_NUM_SEQS and not plan.lowered_max_num_seqs
    assert plan.kv_cache_bytes == 65 * 2048 * 23_048
    text = plan.describe(resident_bytes=4 * 10**9, copies_bytes=10**9)
    assert "64 sequences x 2,048 tokens x 23,048 B" in text
    # the cache is in what the process holds once started; the copies and the rest come on top
    total = 5 * 10**9 + plan.step_bytes + plan.http_bytes
    assert f"at most {total / 1e9:.2f} GB" in text
    # the HTTP side: a flood of connections, and 128 KiB for each request running or waiting
    assert plan.http_bytes == (256 << 20) + (64 + 1024) * (128 << 10)


def test_the_step_memory_counts_a_chunk_against_the_whole_context():
    small = _plan(max_model_len=1024, max_num_seqs=16)
    large = _plan(max_model_len=8192, max_num_seqs=16)
    # the chunk's attention scores: 9 heads x 512 queries x the context, float32, and its mask
    grown = (4 * 9 * 512 + 512) * (8192 - 1024)
    assert large.step_bytes - small.step_bytes == grown


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (dict(max_model_len=9000), r"--max-model-len must be in \[2, 8192\]"),
        (dict(max_num_seqs=0), "--max-num-seqs must be >= 1"),
        (dict(kv_cache_memory=10**8), "cannot hold one sequence of --max-model-len 8192"),
        (
            dict(max_num_seqs=64),
            "--max-num-seqs 64 at --max-model-len 8192 needs a KV cache of 12.27 GB but "
            "--kv-cache-memory is 6.00 GB",
        ),
        (dict(max_num_seqs=16, max_step_tokens=16), r"--max-step-tokens \(16\) must exceed"),
    ],
)
def test_a_config_that_cannot_fit_is_one_line_naming_the_knob(overrides, message):
    with pytest.raises(ServePlanError, match=message) as caught:
        _plan(**overrides)
    assert "\n" not in str(caught.value)


def test_memory_sizes_and_fractions():
    assert parse_memory("4GB") == 4 * 10**9
    assert parse_memory("4 GiB") == 4 << 30
    assert parse_memory("1048576") == 1 << 20
    assert parse_memory("0.25", total=8 * 10**9) == 2 * 10**9
    with pytest.raises(ServePlanError, match="neither a size"):
        parse_memory("lots")
    with pytest.raises(ServePlanError, match="neither a size"):
        parse_memory("4 parsecs")
