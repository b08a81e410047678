"""Hugging Face <-> Megatron-core GPT weights: layouts, tensor/pipeline splits, real model keys.

The conversion is pure torch and is tested everywhere. The tests that build a Megatron-core
``GPTModel`` need ``pip install megatron-core`` (skipped without it). Building the local-spec model
works on the CPU, so its state-dict keys and shapes are checked here; its forward pass does not,
so the CPU logits test patches its CUDA-only spots (``tests/trainer/strategies/megatron_world.py``)
and the unpatched logits test is ``@pytest.mark.gpu``.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.trainer.strategies.megatron_world import cpu_forward_patches, megatron_world  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.strategies.megatron_weights import (  # noqa: E402
    SUPPORTED_ARCHITECTURES,
    hf_to_megatron,
    layers_of_stage,
    megatron_to_hf,
    merge_pipeline_stages,
    split_pipeline_stages,
)

LOGITS_ATOL = 1e-4


@pytest.fixture(scope="module")
def llama():
    model, _ = load_model("tiny-random")
    return model


@pytest.fixture(scope="module")
def qwen2():
    config = transformers.Qwen2Config(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(config).eval()
    with torch.no_grad():  # transformers starts biases at 0, which would hide a misplaced one
        for name, parameter in model.named_parameters():
            if name.endswith(".bias"):
                parameter.normal_()
    return model


def assert_same_state(actual: dict, expected: dict) -> None:
    assert list(actual) == list(expected)
    for key, tensor in expected.items():
        assert actual[key].dtype == tensor.dtype, key
        assert torch.equal(actual[key], tensor), key


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("layer_spec", ["local", "te"])
@pytest.mark.parametrize("tensor_parallel", [1, 2])
def test_llama_round_trip_is_bit_exact(llama, tensor_parallel, layer_spec):
    state = llama.state_dict()
    shards = hf_to_megatron(
        state, llama.config, tensor_parallel=tensor_parallel, layer_spec=layer_spec
    )
    assert len(shards) == tensor_parallel
    back = megatron_to_hf(shards, llama.config, layer_spec=layer_spec)
    assert_same_state(back, state)
    assert back["lm_head.weight"] is back["model.embed_tokens.weight"]  # tied, as in HF


@pytest.mark.parametrize("tensor_parallel", [1, 2])
def test_qwen2_round_trip_with_biases_is_bit_exact(qwen2, tensor_parallel):
    state = qwen2.state_dict()
    shards = hf_to_megatron(state, qwen2.config, tensor_parallel=tensor_parallel)
    assert all("decoder.layers.1.self_attention.linear_qkv.bias" in s for s in shards)
    assert_same_state(megatron_to_hf(shards, qwen2.config), state)


def test_bfloat16_round_trip_keeps_dtype(qwen2):
    state = {k: v.to(torch.bfloat16) for k, v in qwen2.state_dict().items()}
    shards = hf_to_megatron(state, qwen2.config, tensor_parallel=2)
    assert {t.dtype for s in shards for t in s.values()} == {torch.bfloat16}
    assert_same_state(megatron_to_hf(shards, qwen2.config), state)


def test_tied_lm_head_may_be_absent(llama):
    state = {k: v for k, v in llama.state_dict().items() if k != "lm_head.weight"}
    (shard,) = hf_to_megatron(state, llama.config)
    assert "output_layer.weight" not in shard


# --------------------------------------------------------------------------- layouts


def test_shard_shapes_are_one_tp_th_of_the_parallel_dim(qwen2):
    c = qwen2.config
    tp, h, hd = 2, c.hidden_size, c.hidden_size // c.num_attention_heads
    qkv_rows = (c.num_attention_heads + 2 * c.num_key_value_heads) * hd
    layer = "decoder.layers.0."
    expected = {
        "embedding.word_embeddings.weight": (c.vocab_size // tp, h),
        layer + "input_layernorm.weight": (h,),
        layer + "self_attention.linear_qkv.weight": (qkv_rows // tp, h),
        layer + "self_attention.linear_qkv.bias": (qkv_rows // tp,),
        layer + "self_attention.linear_proj.weight": (h, c.num_attention_heads * hd // tp),
        layer + "pre_mlp_layernorm.weight": (h,),
        layer + "mlp.linear_fc1.weight": (2 * c.intermediate_size // tp, h),
        layer + "mlp.linear_fc2.weight": (h, c.intermediate_size // tp),
        "decoder.final_layernorm.weight": (h,),
        "output_layer.weight": (c.vocab_size // tp, h),
    }
    for shard in hf_to_megatron(qwen2.state_dict(), c, tensor_parallel=tp):
        shapes = {
            k: tuple(v.shape) for k, v in shard.items() if not k.startswith("decoder.layers.1.")
        }
        assert shapes == expected


def test_llama_head_dim_comes_from_the_config(llama):
    assert llama.config.head_dim == 32
    shards = hf_to_megatron(llama.state_dict(), llama.config, tensor_parallel=2)
    qkv = shards[0]["decoder.layers.0.self_attention.linear_qkv.weight"]
    assert qkv.shape == ((4 + 2 * 2) * 32 // 2, 128)
    assert "output_layer.weight" not in shards[0]  # tied embeddings


def test_te_spec_puts_the_norms_in_the_next_linear(llama):
    (shard,) = hf_to_megatron(llama.state_dict(), llama.config, layer_spec="te")
    state = llama.state_dict()
    layer = "decoder.layers.1."
    assert torch.equal(
        shard[layer + "self_attention.linear_qkv.layer_norm_weight"],
        state["model.layers.1.input_layernorm.weight"],
    )
    assert torch.equal(
        shard[layer + "mlp.linear_fc1.layer_norm_weight"],
        state["model.layers.1.post_attention_layernorm.weight"],
    )
    assert layer + "input_layernorm.weight" not in shard


@pytest.mark.parametrize("kind", ["weight", "bias"])
def test_fused_qkv_rows_are_grouped_by_key_value_head(qwen2, kind):
    c, state = qwen2.config, qwen2.state_dict()
    hd = c.hidden_size // c.num_attention_heads
    per_group = c.num_attention_heads // c.num_key_value_heads
    q, k, v = (state[f"model.layers.1.self_attn.{p}_proj.{kind}"] for p in "qkv")
    (shard,) = hf_to_megatron(state, c)
    fused = shard[f"decoder.layers.1.self_attention.linear_qkv.{kind}"]
    block = (per_group + 2) * hd
    for g in range(c.num_key_value_heads):
        rows = fused[g * block : (g + 1) * block]
        heads = range(g * per_group, (g + 1) * per_group)
        for j, head in enumerate(heads):
            assert torch.equal(rows[j * hd : (j + 1) * hd], q[head * hd : (head + 1) * hd])
        assert torch.equal(rows[per_group * hd : (per_group + 1) * hd], k[g * hd : (g + 1) * hd])
        assert torch.equal(rows[(per_group + 1) * hd :], v[g * hd : (g + 1) * hd])
    # With 2 key/value heads over 2 ranks, rank g holds exactly group g.
    shards = hf_to_megatron(state, c, tensor_parallel=2)
    for g, rank_shard in enumerate(shards):
        qkv = rank_shard[f"decoder.layers.1.self_attention.linear_qkv.{kind}"]
        assert torch.equal(qkv, fused[g * block : (g + 1) * block])


def test_fc1_holds_gate_then_up_per_rank_and_row_parallel_splits_columns(llama):
    c, state = llama.config, llama.state_dict()
    tp, ffn = 2, c.intermediate_size
    gate = state["model.layers.0.mlp.gate_proj.weight"]
    up = state["model.layers.0.mlp.up_proj.weight"]
    down = state["model.layers.0.mlp.down_proj.weight"]
    o_proj = state["model.layers.0.self_attn.o_proj.weight"]
    embed = state["model.embed_tokens.weight"]
    part, cols, vocab = ffn // tp, o_proj.shape[1] // tp, c.vocab_size // tp
    for r, shard in enumerate(hf_to_megatron(state, c, tensor_parallel=tp)):
        fc1 = shard["decoder.layers.0.mlp.linear_fc1.weight"]
        assert torch.equal(fc1[:part], gate[r * part : (r + 1) * part])
        assert torch.equal(fc1[part:], up[r * part : (r + 1) * part])
        fc2 = shard["decoder.layers.0.mlp.linear_fc2.weight"]
        assert torch.equal(fc2, down[:, r * part : (r + 1) * part])
        proj = shard["decoder.layers.0.self_attention.linear_proj.weight"]
        assert torch.equal(proj, o_proj[:, r * cols : (r + 1) * cols])
        words = shard["embedding.word_embeddings.weight"]
        assert torch.equal(words, embed[r * vocab : (r + 1) * vocab])


# --------------------------------------------------------------------------- errors


def test_heads_that_do_not_divide_by_tensor_parallel_name_the_sizes(llama):
    with pytest.raises(ValueError, match=r"num_attention_heads=4 .*tensor_parallel=3"):
        hf_to_megatron(llama.state_dict(), llama.config, tensor_parallel=3)


def test_vocab_that_does_not_divide_names_the_sizes(qwen2):
    config = transformers.Qwen2Config(**{**qwen2.config.to_dict(), "vocab_size": 255})
    with pytest.raises(ValueError, match=r"vocab_size=255 .*tensor_parallel=2"):
        hf_to_megatron({}, config, tensor_parallel=2)


def test_key_value_heads_and_tensor_parallel_must_nest():
    config = transformers.Qwen2Config(
        hidden_size=96, num_attention_heads=6, num_key_value_heads=3, intermediate_size=64
    )
    with pytest.raises(ValueError, match=r"num_key_value_heads=3 and tensor_parallel=2"):
        hf_to_megatron({}, config, tensor_parallel=2)


def test_fewer_key_value_heads_than_ranks_round_trips(qwen2):
    config = transformers.Qwen2Config(**{**qwen2.config.to_dict(), "num_key_value_heads": 1})
    torch.manual_seed(1)
    state = transformers.Qwen2ForCausalLM(config).state_dict()
    shards = hf_to_megatron(state, config, tensor_parallel=2)
    assert shards[0]["decoder.layers.0.self_attention.linear_qkv.weight"].shape == (48, 64)
    assert_same_state(megatron_to_hf(shards, config), state)


@pytest.mark.parametrize(
    "config",
    [
        transformers.GPT2Config(),
        transformers.MistralConfig(architectures=["MistralForCausalLM"]),
    ],
    ids=["gpt2", "mistral"],
)
def test_unknown_architecture_names_the_supported_ones(config):
    with pytest.raises(ValueError, match="unsupported architecture") as error:
        hf_to_megatron({}, config)
    assert all(name in str(error.value) for name in SUPPORTED_ARCHITECTURES)


def test_missing_and_unknown_weights_are_reported(qwen2):
    state = dict(qwen2.state_dict())
    del state["model.layers.1.self_attn.k_proj.bias"]
    with pytest.raises(KeyError, match="model.layers.1.self_attn.k_proj.bias"):
        hf_to_megatron(state, qwen2.config)
    state = {**qwen2.state_dict(), "model.layers.2.mlp.up_proj.weight": torch.zeros(1)}
    with pytest.raises(ValueError, match="model.layers.2.mlp.up_proj.weight"):
        hf_to_megatron(state, qwen2.config)
    shards = hf_to_megatron(qwen2.state_dict(), qwen2.config, tensor_parallel=2)
    del shards[1]["output_layer.weight"]
    with pytest.raises(KeyError, match="shard 1 has no output_layer.weight"):
        megatron_to_hf(shards, qwen2.config)


def test_megatron_to_hf_rejects_ranks_whose_norms_differ(qwen2):
    shards = hf_to_megatron(qwen2.state_dict(), qwen2.config, tensor_parallel=2)
    shards[1]["decoder.final_layernorm.weight"] = shards[1]["decoder.final_layernorm.weight"] + 1
    with pytest.raises(ValueError, match="differs between tensor-parallel ranks 0 and 1"):
        megatron_to_hf(shards, qwen2.config)


# --------------------------------------------------------------------------- pipeline stages


def test_layers_of_stage_splits_evenly():
    assert [list(layers_of_stage(6, 3, p)) for p in range(3)] == [[0, 1], [2, 3], [4, 5]]
    assert list(layers_of_stage(2, 1, 0)) == [0, 1]
    with pytest.raises(ValueError, match="num_layers=5 does not divide by pipeline_parallel=2"):
        layers_of_stage(5, 2, 0)
    with pytest.raises(ValueError, match="stage 2"):
        layers_of_stage(4, 2, 2)


@pytest.mark.parametrize("fixture", ["llama", "qwen2"])
def test_pipeline_stages_renumber_layers_and_merge_back(fixture, request):
    model = request.getfixturevalue(fixture)
    config = model.config
    shards = hf_to_megatron(model.state_dict(), config, tensor_parallel=2)
    for shard in shards:
        first, last = split_pipeline_stages(shard, config, pipeline_parallel=2)
        assert "embedding.word_embeddings.weight" in first
        assert "decoder.final_layernorm.weight" in last
        assert {k.split(".")[2] for k in first if k.startswith("decoder.layers.")} == {"0"}
        assert {k.split(".")[2] for k in last if k.startswith("decoder.layers.")} == {"0"}
        assert torch.equal(
            last["decoder.layers.0.mlp.linear_fc2.weight"],
            shard["decoder.layers.1.mlp.linear_fc2.weight"],
        )
        # The last stage always has an output layer: with tied embeddings, a copy of them.
        expected_output = shard.get(
            "output_layer.weight", shard["embedding.word_embeddings.weight"]
        )
        assert torch.equal(last["output_layer.weight"], expected_output)
        merged = merge_pipeline_stages([first, last], config)
        assert merged.keys() == shard.keys()
        assert all(torch.equal(merged[k], v) for k, v in shard.items())
    assert_same_state(megatron_to_hf(shards, config), model.state_dict())


# --------------------------------------------------------------------------- real Megatron model


@pytest.fixture(scope="module")
def megatron_single_rank():
    """torch.distributed (world size 1) and Megatron's parallel state, TP = PP = 1."""
    pytest.importorskip("megatron.core", reason="pip install megatron-core")
    with megatron_world():
        yield


def build_megatron_model(hf_config):
    """A local-spec Megatron GPTModel for ``hf_config``, its parameters made on the CPU."""
    from trainer.strategies.megatron_strategy import build_gpt_model

    return build_gpt_model(hf_config).eval()


def load_converted(megatron_model, hf_model) -> None:
    (shard,) = hf_to_megatron(hf_model.state_dict(), hf_model.config)
    result = megatron_model.load_state_dict(shard, strict=False)
    assert result.unexpected_keys == []
    assert all(key.endswith("._extra_state") for key in result.missing_keys)


@pytest.mark.parametrize("fixture", ["llama", "qwen2"])
def test_keys_and_shapes_match_a_real_megatron_gpt_model(fixture, request, megatron_single_rank):
    hf_model = request.getfixturevalue(fixture)
    megatron_model = build_megatron_model(hf_model.config)
    expected = {
        key: tuple(value.shape)
        for key, value in megatron_model.state_dict().items()
        if not key.endswith("._extra_state")
    }
    (shard,) = hf_to_megatron(hf_model.state_dict(), hf_model.config)
    assert {key: tuple(value.shape) for key, value in shard.items()} == expected
    # and megatron_to_hf takes the model's own state dict, _extra_state and all
    load_converted(megatron_model, hf_model)
    assert_same_state(
        megatron_to_hf([megatron_model.state_dict()], hf_model.config), hf_model.state_dict()
    )


def _input_ids(vocab_size: int, device: str = "cpu"):
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab_size, (2, 16), generator=generator)
    return ids.to(device), torch.arange(16, device=device)[None].expand(2, -1)


@pytest.mark.parametrize("fixture", ["llama", "qwen2"])
def test_megatron_logits_equal_hf_on_cpu(fixture, request, megatron_single_rank):
    hf_model = request.getfixturevalue(fixture)
    megatron_model = build_megatron_model(hf_model.config)
    load_converted(megatron_model, hf_model)
    ids, positions = _input_ids(hf_model.config.vocab_size)
    causal = torch.ones(16, 16, dtype=torch.bool).triu(diagonal=1)[None, None]  # True: masked
    with cpu_forward_patches(), torch.no_grad():
        logits = megatron_model(ids, positions, attention_mask=causal)
        expected = hf_model(ids).logits
    torch.testing.assert_close(logits, expected, atol=LOGITS_ATOL, rtol=0)


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="megatron-core's GPTModel forward needs CUDA: its rotary embedding moves inv_freq to "
    "torch.cuda.current_device(), its default causal mask is made on 'cuda', and attention "
    "dropout forks the CUDA RNG tracker that model_parallel_cuda_manual_seed sets up",
)
@pytest.mark.parametrize("fixture", ["llama", "qwen2"])
def test_megatron_logits_equal_hf_on_gpu(fixture, request, megatron_single_rank):
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed

    hf_model = request.getfixturevalue(fixture)
    model_parallel_cuda_manual_seed(0)
    megatron_model = build_megatron_model(hf_model.config)
    load_converted(megatron_model, hf_model)
    megatron_model.cuda()
    hf_gpu = copy.deepcopy(hf_model).cuda()
    ids, positions = _input_ids(hf_model.config.vocab_size, device="cuda")
    with torch.no_grad():
        logits = megatron_model(ids, positions, attention_mask=None)  # Megatron's causal mask
        expected = hf_gpu(ids).logits
    torch.testing.assert_close(logits, expected, atol=LOGITS_ATOL, rtol=0)
