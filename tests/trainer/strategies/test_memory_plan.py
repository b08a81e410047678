"""Tests of ``trainer.strategies.memory_plan``: parameter counts on the meta device, how each
strategy divides the bytes, the activation estimate against what autograd really saves, and
the one-line refusal of a config that cannot fit."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from trainer.config import ConfigError, LoraConfig, load_config  # noqa: E402
from trainer.models import load_model, load_tokenizer, tiny_random_config  # noqa: E402
from trainer.strategies.logprobs import score_tokens  # noqa: E402
from trainer.strategies.memory_plan import (  # noqa: E402
    MemoryPlan,
    available_memory_per_worker,
    check_fits,
    parameter_count,
    plan_for_config,
    plan_memory,
)


@pytest.fixture(scope="module")
def tiny():
    return tiny_random_config(load_tokenizer("tiny-random"))


def _state(plan: MemoryPlan) -> int:
    return plan.parameters + plan.optimizer


def test_parameter_count_matches_the_loaded_model(tiny):
    model = load_model("tiny-random")[0]
    expected = sum(p.numel() for p in model.parameters())
    assert parameter_count(tiny) == (expected, expected)


def test_lora_parameter_count_matches_peft(tiny):
    peft = pytest.importorskip("peft")
    lora = LoraConfig(r=4, target_modules=["q_proj", "v_proj", "down_proj"])
    model = peft.get_peft_model(
        load_model("tiny-random")[0],
        peft.LoraConfig(r=lora.r, target_modules=lora.target_modules, task_type="CAUSAL_LM"),
    )
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert parameter_count(tiny, lora) == (sum(p.numel() for p in model.parameters()), trainable)


def test_lora_naming_no_layer_is_a_config_error(tiny):
    with pytest.raises(ConfigError, match="model.lora.target_modules"):
        parameter_count(tiny, LoraConfig(target_modules=["no_such_proj"]))


@pytest.mark.parametrize(
    "strategy, options",
    [("fsdp2", {}), ("deepspeed", {"zero_stage": 3})],
    ids=["fsdp2", "zero3"],
)
def test_sharding_parameters_halves_the_state_on_two_workers(tiny, strategy, options):
    one = plan_memory(tiny, strategy=strategy, workers=1, **options)
    two = plan_memory(tiny, strategy=strategy, workers=2, **options)
    assert 0.5 <= _state(two) / _state(one) <= 0.6  # half, plus one layer all-gathered
    assert two.gradients == one.gradients // 2
    assert two.activations == one.activations  # each worker runs its own micro-batch


def test_zero_stages_shard_optimizer_then_gradients_then_parameters(tiny):
    plans = {
        (stage, workers): plan_memory(tiny, strategy="deepspeed", workers=workers, zero_stage=stage)
        for stage in (1, 2, 3)
        for workers in (1, 2)
    }
    one_1, two_1 = plans[1, 1], plans[1, 2]
    assert two_1.optimizer == one_1.optimizer // 2
    assert (two_1.gradients, two_1.parameters) == (one_1.gradients, one_1.parameters)
    one_2, two_2 = plans[2, 1], plans[2, 2]
    assert (two_2.optimizer, two_2.gradients) == (one_2.optimizer // 2, one_2.gradients // 2)
    assert two_2.parameters == one_2.parameters
    assert plans[3, 2].parameters < 0.6 * plans[2, 2].parameters


def test_torch_holds_everything_and_megatron_divides_by_its_model_parallel_size(tiny):
    torch_plan = plan_memory(tiny, strategy="torch", workers=4)
    total, _ = parameter_count(tiny)
    assert torch_plan.parameters == 4 * total
    assert torch_plan.optimizer == 8 * total
    megatron = plan_memory(tiny, strategy="megatron", tensor_parallel=2, pipeline_parallel=2)
    assert megatron.optimizer == torch_plan.optimizer // 4
    assert megatron.activations < torch_plan.activations


def test_lora_optimizer_bytes_follow_the_adapter_count(tiny):
    small, large = LoraConfig(r=4), LoraConfig(r=16)
    plan_small = plan_memory(tiny, lora=small)
    plan_large = plan_memory(tiny, lora=large)
    assert plan_small.optimizer == 8 * parameter_count(tiny, small)[1]
    assert plan_large.optimizer == 4 * plan_small.optimizer
    assert plan_small.optimizer < plan_memory(tiny).optimizer / 100


def test_offload_optimizer_moves_its_bytes_to_the_host(tiny):
    kept = plan_memory(tiny, strategy="deepspeed", workers=2, zero_stage=2)
    offloaded = plan_memory(
        tiny, strategy="deepspeed", workers=2, zero_stage=2, offload_optimizer=True
    )
    assert offloaded.optimizer == 0
    assert offloaded.offloaded == kept.optimizer
    assert offloaded.total == kept.total - kept.optimizer
    with pytest.raises(ConfigError, match="deepspeed"):
        plan_memory(tiny, strategy="fsdp2", workers=2, offload_optimizer=True)
    with pytest.raises(ConfigError, match="zero_stage=3"):
        plan_memory(tiny, strategy="deepspeed", zero_stage=2, offload_params=True)


def test_reference_copy_only_without_lora(tiny):
    total, _ = parameter_count(tiny)
    assert plan_memory(tiny, reference=True).reference == 4 * total
    assert plan_memory(tiny, reference=True, lora=LoraConfig()).reference == 0
    assert plan_memory(tiny).reference == 0


def _saved_bytes(model, tokens: int) -> int:
    """Bytes autograd saves for backward in one training forward of ``tokens`` tokens."""
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    ids = torch.randint(0, model.config.vocab_size, (1, tokens))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        score_tokens(model, ids, None, torch.ones(1, tokens), packed_lengths=[tokens])
    return sum(saved.values())


@pytest.mark.parametrize("hidden, mlp", [(128, 512), (256, 688)])
def test_activation_estimate_covers_what_autograd_saves(hidden, mlp):
    config = LlamaConfig(
        vocab_size=500,
        hidden_size=hidden,
        intermediate_size=mlp,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).train()
    measured = _saved_bytes(model, 256)
    estimate = plan_memory(config, micro_batch_tokens=256).activations
    logits_gradient = 256 * config.vocab_size * 4  # counted by the plan, not saved
    assert measured <= estimate <= 1.05 * measured + logits_gradient
    checkpointed = plan_memory(config, micro_batch_tokens=256, activation_checkpointing=True)
    assert checkpointed.activations < estimate


def test_check_fits_refuses_with_the_numbers_and_a_knob(tiny):
    plan = plan_memory(tiny, strategy="fsdp2", workers=2, micro_batch_tokens=8192)
    with pytest.raises(ConfigError) as refused:
        check_fits(plan, available=2**20)
    message = str(refused.value)
    assert "\n" not in message
    assert "fsdp2 ×2" in message and "1.00 MiB" in message
    assert f"{plan.activations / 2**30:.2f} GiB" in message  # the biggest term, in GiB
    assert "optim.micro_batch_tokens (now 8192)" in message
    check_fits(plan, available=plan.total)


def test_check_fits_names_the_knob_of_the_biggest_term(tiny):
    wide = LlamaConfig(vocab_size=100, hidden_size=512, intermediate_size=2048, num_hidden_layers=8)
    optimizer_bound = plan_memory(wide, strategy="deepspeed", micro_batch_tokens=16)
    with pytest.raises(ConfigError, match="train.deepspeed.offload_optimizer=true"):
        check_fits(optimizer_bound, available=2**20)
    layer_bound = plan_memory(wide, micro_batch_tokens=65536)  # many layers, small vocabulary
    with pytest.raises(ConfigError, match="; set train.activation_checkpointing=true or lower"):
        check_fits(layer_bound, available=2**20)


def test_plan_for_config_and_available_memory():
    overrides = ["model.name=tiny-random", "train.strategy=fsdp2", "train.workers=2"]
    config = load_config("frozenlake", overrides)
    model_config = tiny_random_config(load_tokenizer(config.model.name))
    plan = plan_for_config(config, model_config)
    assert (plan.strategy, plan.workers) == ("fsdp2", 2)
    assert plan == plan_memory(
        model_config,
        strategy="fsdp2",
        workers=2,
        lora=config.model.lora,
        micro_batch_tokens=config.optim.micro_batch_tokens,
    )
    ppo = plan_for_config(
        load_config("frozenlake", [*overrides, "algorithm.name=ppo"]), model_config
    )
    assert ppo.optimizer - plan.optimizer == 8 * (model_config.hidden_size + 1) // 2
    assert plan.lines()[0].startswith("memory plan per worker (fsdp2 ×2)")

    tiny_budget = load_config("frozenlake", [*overrides, "train.worker_memory_gib=0.001"])
    assert available_memory_per_worker(tiny_budget) == int(0.001 * 2**30)
    with pytest.raises(ConfigError, match="memory plan: fsdp2 ×2 needs"):
        check_fits(plan, available_memory_per_worker(tiny_budget))
    if not torch.cuda.is_available():  # this machine's memory, shared by the workers
        one = load_config("frozenlake", ["model.name=tiny-random", "train.strategy=fsdp2"])
        assert available_memory_per_worker(config) == available_memory_per_worker(one) // 2 > 0
    large = load_config("frozenlake", [*overrides, "train.worker_memory_gib=1000"])
    check_fits(plan, available_memory_per_worker(large))


def test_mixed_precision_adds_a_bfloat16_copy_and_halves_layer_activations(tiny):
    full = plan_memory(tiny, strategy="fsdp2", workers=2, micro_batch_tokens=256)
    mixed = plan_memory(
        tiny, strategy="fsdp2", workers=2, micro_batch_tokens=256, mixed_precision=True
    )
    total, _ = parameter_count(tiny)
    # + 2 bytes per parameter, sharded by 2; the gathered layer shrinks to bfloat16
    assert total - 2**20 <= mixed.parameters - full.parameters < total
    assert mixed.optimizer == full.optimizer and mixed.gradients == full.gradients
    logits = 256 * tiny.vocab_size * 8  # float32 whatever the compute dtype
    assert mixed.activations - logits == (full.activations - logits) // 2
