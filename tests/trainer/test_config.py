from __future__ import annotations

import pytest

import rollenv
from trainer.config import ConfigError, load_config, preset_names

# the preset whose replies are free text over the whole episode's context ("sokoban" constrains
# them to one action word over a window), for the checks that only free replies can trip
FREE_TEXT = "sokoban-sft-raft"


def test_presets_load_and_validate():
    assert {"sokoban", "frozenlake"} <= set(preset_names())
    for name in preset_names():
        config = load_config(name)
        assert config.env.group_size > 0


def test_overrides_reach_nested_fields_and_parse_yaml_values():
    config = load_config(
        "sokoban",
        [
            "optim.lr=3e-4",
            "env.kwargs={dim_room: [7, 7]}",
            "model.lora=null",
            "train.loggers=[jsonl]",
        ],
    )
    assert config.optim.lr == pytest.approx(3e-4)
    assert config.env.kwargs == {"dim_room": [7, 7]}
    assert config.model.lora is None
    assert config.train.loggers == ["jsonl"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("env.group_size=0", "env.group_size: Input should be greater than 0 (got 0)"),
        (
            "algorithm.name=dqn",
            "algorithm.name: Input should be 'starpo', 'grpo', 'gigpo', 'ppo', "
            "'rloo', 'reinforce++' or 'raft' (got 'dqn')",
        ),
        (
            "algorithm.aggregation=mean",
            "'token-mean', 'seq-mean-token-mean' or 'seq-mean-token-sum'",
        ),
        ("generation.dtype=float16", "generation.dtype: Input should be 'float32' or 'bfloat16'"),
        ("generation.dtype=bfloat16", "set algorithm.old_logprobs=recompute"),
        ("train.steps", "--set expects key=value"),
        # an unknown key: the closest names, or all of them
        ("optim.lrr=0.1", "optim.lrr: unknown field (did you mean optim.lr?)"),
        ("optim.LR=0.1", "optim.LR: unknown field (did you mean optim.lr?)"),
        ("optm.lr=0.1", "optm: unknown section (did you mean optim?)"),
        (
            "optim.learning_rate=1",
            "optim.learning_rate: unknown field (optim's fields: lr, weight_decay, grad_clip, ",
        ),
        ("zzzz.lr=1", "zzzz: unknown section (sections: model, env, sampling, "),
        ("train.steps=-1", "train.steps: Input should be greater than or equal to 0"),
        ("env.action_format=tool", "env.action_format: Input should be 'text' or 'tools'"),
        ("env.tool_call_format=hermse", "(got 'hermse'; did you mean 'hermes'?)"),
        # the preset scores among its action words; a tool call's grammar allows a changing set
        ("env.action_format=tools", "set algorithm.score_actions_only=false"),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(override, message):
    with pytest.raises(ConfigError) as excinfo:
        load_config("sokoban", [override])
    assert message in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


@pytest.mark.parametrize(
    ("overrides", "term"),
    [
        (["algorithm.kl_coef=0.1"], "algorithm.kl_coef > 0 with kl_mode=loss"),
        (["algorithm.name=ppo"], "algorithm.name=ppo"),
    ],
)
def test_skipping_zero_advantage_episodes_is_refused_when_they_still_have_a_loss(overrides, term):
    with pytest.raises(ConfigError, match="skip_zero_advantage") as excinfo:
        load_config(FREE_TEXT, ["algorithm.skip_zero_advantage=true", *overrides])
    assert term in str(excinfo.value)
    # a KL charged to the reward is part of the advantage, so the episodes can still go
    load_config(
        "sokoban",
        ["algorithm.skip_zero_advantage=true", "algorithm.kl_coef=0.1", "algorithm.kl_mode=reward"],
    )


def test_unknown_preset_lists_the_presets():
    with pytest.raises(ConfigError, match="no preset 'chess'; presets: .*sokoban"):
        load_config("chess")


def test_defaults_without_a_preset():
    config = load_config(None, ["env.id=FrozenLake-v0"])
    assert config.env.id == "FrozenLake-v0" and config.algorithm.name == "starpo"


def test_ray_flags_switch_the_rollout_mode_and_join_a_cluster():
    from trainer.cli.launch import config_from_args
    from trainer.cli.main import build_parser

    parser = build_parser()
    local = config_from_args(parser.parse_args(["train", "--env", "sokoban"]))
    assert local.rollout.mode == "local"
    args = parser.parse_args(["train", "--env", "sokoban", "--ray-address", "10.0.0.5:6379"])
    joined = config_from_args(args)
    assert (joined.rollout.mode, joined.rollout.ray_address) == ("ray", "10.0.0.5:6379")
    assert (
        config_from_args(parser.parse_args(["train", "--env", "sokoban", "--ray"])).rollout.mode
        == "ray"
    )


def test_the_agent_flag_names_the_agent_program():
    from trainer.cli.launch import config_from_args
    from trainer.cli.main import build_parser

    args = build_parser().parse_args(["train", "--env", "FrozenLake-v0", "--agent", "a.b:c"])
    assert config_from_args(args).agent.function == "a.b:c"
    assert load_config(None, ["agent=shop.agents:shop"]).agent.function == "shop.agents:shop"


def test_generation_engine_options_carry_the_non_defaults():
    assert load_config("sokoban").generation.engine_options() == {}
    off = load_config("sokoban", ["generation.packed_weights=false"]).generation
    assert off.engine_options() == {"packed_weights": False}
    hf = load_config("sokoban", ["generation.backend=hf", "generation.packed_weights=false"])
    assert hf.generation.engine_options() == {}  # the hf backend packs nothing
    bf16 = load_config(
        "sokoban", ["generation.dtype=bfloat16", "algorithm.old_logprobs=recompute"]
    ).generation
    assert bf16.engine_options() == {"dtype": "bfloat16"}


def test_gpu_engines_get_the_trainers_dtype_their_memory_share_and_their_own_arguments():
    vllm = load_config(
        "sokoban",
        [
            "generation.backend=vllm",
            "generation.offload=true",
            "generation.gpu_memory_utilization=0.25",
            "generation.engine_args={enforce_eager: true, max_model_len: 4096}",
        ],
    ).generation
    assert vllm.engine_options() == {
        "dtype": "float32",
        "gpu_memory_utilization": 0.25,
        "offload": True,
        "enforce_eager": True,
        "max_model_len": 4096,
    }
    sglang = load_config(FREE_TEXT, ["generation.backend=sglang"]).generation
    assert sglang.engine_options() == {"dtype": "float32", "mem_fraction_static": 0.3}
    # on Ray, each generator actor runs the engine on a GPU of its own
    on_ray = ["generation.backend=vllm", "rollout.mode=ray", "rollout.generator_gpus=1"]
    assert load_config(FREE_TEXT, on_ray).rollout.generator_gpus == 1
    # vLLM's log-probs of constrained replies are those of the words' distribution: the
    # trainer may reuse them when it scores among the words too
    among_words = [
        "generation.backend=vllm",
        "env.constrain_to_actions=true",
        "algorithm.old_logprobs=generator",
        "algorithm.score_actions_only=true",
    ]
    assert load_config(FREE_TEXT, among_words).algorithm.score_actions_only
    # so do ours, asked to (SamplingParams.logprobs_among_allowed)
    assert load_config(FREE_TEXT, among_words[1:]).generation.backend == "continuous"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["generation.backend=vllm", "rollout.mode=ray"],
            "generation.backend=vllm with rollout.mode=ray runs in the generator actors, on GPUs "
            "of their own: set rollout.generator_gpus",
        ),
        (
            [
                "generation.backend=vllm",
                "generation.offload=true",
                "rollout.mode=ray",
                "rollout.generator_gpus=1",
            ],
            "generation.offload frees the GPU that vLLM shares with the trainer",
        ),
        (["generation.offload=true"], "generation.offload puts vLLM to sleep"),
        (["generation.backend=sglang", "generation.offload=true"], "needs generation.backend=vllm"),
        (["generation.engine_args={enforce_eager: true}"], "generation.engine_args are passed"),
        (
            ["generation.backend=hf", "generation.dtype=bfloat16"],
            "generation.dtype=bfloat16 needs generation.backend=continuous, vllm or sglang",
        ),
        (["generation.gpu_memory_utilization=1.5"], "generation.gpu_memory_utilization"),
        (["algorithm.score_actions_only=true"], "set env.constrain_to_actions=true"),
        (
            [
                "generation.backend=vllm",
                "env.constrain_to_actions=true",
                "algorithm.old_logprobs=generator",
            ],
            "with algorithm.old_logprobs=generator set algorithm.score_actions_only=true",
        ),
        (
            ["generation.backend=sglang", "env.constrain_to_actions=true"],
            "generation.backend=sglang cannot restrict sampling to the action words",
        ),
    ],
)
def test_gpu_engine_settings_that_cannot_work_are_refused(overrides, message):
    with pytest.raises(ConfigError) as excinfo:
        load_config(FREE_TEXT, overrides)
    assert message in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


def test_algo_flag_keeps_the_presets_context_except_for_ppo(tmp_path):
    from trainer.cli.launch import config_from_args
    from trainer.cli.main import build_parser

    parser = build_parser()

    def context(*argv: str) -> str:
        return config_from_args(parser.parse_args(["train", *argv])).env.context

    # the sokoban preset trains on a window of turns; gigpo keeps it, ppo's critic needs all
    assert context("--env", "sokoban", "--algo", "gigpo") == "window"
    assert context("--env", "sokoban", "--algo", "ppo") == "full"
    # gigpo's anchor groups work on full-context samples too (credit per turn's tokens)
    full = ["--set", "env.context=full"]
    assert context("--env", "sokoban", "--algo", "gigpo", *full) == "full"
    windowed = tmp_path / "windowed.yaml"
    windowed.write_text("env: {id: FrozenLake-v0, context: window}\n")
    assert context("--env", "x", "--config", str(windowed), "--algo", "gigpo") == "window"
    assert context("--env", "x", "--config", str(windowed), "--algo", "ppo") == "full"


@pytest.mark.parametrize("preset", [n for n in preset_names() if n.endswith("-rl-only")])
def test_the_rl_only_presets_use_no_oracle(preset):
    from trainer.generation.from_config import sampling_params
    from trainer.models import load_tokenizer

    config = load_config(preset)
    assert not config.sft.before_rl  # no warm start on oracle episodes
    if config.env.constrain_to_actions:  # one action word a turn, sampled among the env's
        tokenizer = load_tokenizer()
        params = sampling_params(config, tokenizer)
        words = {tokenizer.decode([t]) for t in params.allowed_token_ids}
        env = rollenv.make(config.env.id, **config.env.make_kwargs)
        assert words == set(env.unwrapped.action_words) and params.max_new_tokens == 1


def test_the_rl_only_presets_are_shipped():
    assert {"sokoban-rl-only", "frozenlake-rl-only", "math-rl-only"} <= set(preset_names())


def test_eval_kwargs_are_laid_over_the_training_kwargs_for_evaluation_only():
    config = load_config(
        "sokoban-rl-only",
        ["env.kwargs.max_solution_length=4", "env.eval_kwargs={max_solution_length: 10}"],
    )
    assert config.env.make_kwargs["max_solution_length"] == 4
    assert config.env.eval_make_kwargs["max_solution_length"] == 10
    # everything else the training envs get, the evaluation envs get too
    assert config.env.eval_make_kwargs["cell_separator"] == config.env.kwargs["cell_separator"]
    assert config.env.eval_make_kwargs["observation"] == config.env.kwargs["observation"]
    plain = load_config("sokoban-rl-only", ["env.eval_kwargs={}"]).env
    assert plain.eval_make_kwargs == plain.make_kwargs


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["env.mix={FrozenLake-v0: 1}", "env.eval_kwargs={size: 3}"],
            "env.eval_kwargs belongs to env.id",
        ),
    ],
)
def test_eval_kwargs_are_refused_where_they_cannot_apply(overrides, message):
    with pytest.raises(ConfigError, match=message) as excinfo:
        load_config(None, overrides)
    assert "\n" not in str(excinfo.value)


def test_the_warm_start_limit_must_leave_time_in_the_whole_run():
    with pytest.raises(ConfigError) as excinfo:
        load_config("sokoban-warm-start-rl", ["sft.max_minutes=60"])
    assert str(excinfo.value) == (
        "config: sft.max_minutes (60) is the warm start's share of the whole run's "
        "train.max_minutes (60): set it below, or sft.max_minutes=null"
    )
    assert load_config("sokoban-warm-start-rl", ["sft.max_minutes=null"]).sft.max_minutes is None
    # without a warm start, its limit does not apply
    assert load_config("sokoban-warm-start-rl", ["sft.max_minutes=90", "sft.before_rl=false"])


def test_the_main_job_is_the_warm_start_for_the_whole_hour():
    config = load_config("sokoban")
    assert config.train.steps == 0 and config.sft.before_rl
    assert config.sft.max_minutes is None and config.train.max_minutes == 60


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["train.workers=2"],
            "train.strategy=torch trains in this process: train.workers must be 1 (got 2); use "
            "train.strategy=fsdp2, deepspeed or megatron for more workers",
        ),
        (
            ["train.strategy=megatron", "model.lora={r: 8}"],
            "config: train.strategy=megatron does not train LoRA adapters: drop model.lora or "
            "use train.strategy=torch, fsdp2 or deepspeed",
        ),
        (
            ["train.strategy=deepspeed", "train.mixed_precision=true"],
            "train.strategy=deepspeed trains in the model's own dtype: drop "
            "train.mixed_precision or use train.strategy=fsdp2",
        ),
        (
            ["train.strategy=megatron", "train.workers=3", "train.megatron.tensor_parallel=2"],
            "train.workers=3 is not a multiple of train.megatron.tensor_parallel=2: the workers "
            "form groups of tensor_parallel",
        ),
    ],
    ids=["torch-workers", "megatron-lora", "mixed-precision", "tensor-groups"],
)
def test_what_a_strategy_cannot_train_is_refused_when_the_config_is_read(overrides, message):
    # static rules, so no cluster, package or device is probed: the config refuses them itself
    with pytest.raises(ConfigError) as refused:
        load_config(None, overrides)
    assert str(refused.value) == message


def test_a_run_of_no_rl_steps_needs_a_warm_start():
    with pytest.raises(ConfigError, match="train.steps=0 runs no RL: set sft.before_rl=true"):
        load_config(None, ["train.steps=0"])
    config = load_config(None, ["train.steps=0", "sft.before_rl=true"])
    assert config.train.steps == 0


def test_partial_rollouts_and_off_policy_corrections_are_checked_by_name():
    with pytest.raises(ConfigError, match=r"rollout\.partial_rollouts needs rollout\.async_gen"):
        load_config(None, ["rollout.mode=ray", "rollout.partial_rollouts=true"])
    with pytest.raises(ConfigError, match=r"set algorithm\.old_logprobs=recompute"):
        load_config(
            None, ["algorithm.off_policy_correction=tis", "algorithm.old_logprobs=generator"]
        )
    with pytest.raises(ConfigError, match=r"off_policy_correction.*'none', 'decoupled' or 'tis'"):
        load_config(None, ["algorithm.off_policy_correction=is"])
    config = load_config(
        None,
        [
            "rollout.mode=ray",
            "rollout.async_generation_ratio=2",
            "rollout.partial_rollouts=true",
            "algorithm.off_policy_correction=tis",
        ],
    )
    assert config.rollout.partial_rollouts and config.algorithm.importance_cap == 2.0


def test_in_flight_weight_loads_are_checked_against_the_backend_and_the_rollout_mode():
    with pytest.raises(ConfigError, match=r"only generation\.backend=continuous offers"):
        load_config(
            None,
            ["rollout.mode=ray", "rollout.in_flight_weights=keep_cache", "generation.backend=hf"],
        )
    with pytest.raises(ConfigError, match=r"rollout\.in_flight_weights needs rollout\.mode=ray"):
        load_config(None, ["rollout.in_flight_weights=recompute_prefix"])
    with pytest.raises(ConfigError, match=r"'next_turn', 'keep_cache' or 'recompute_prefix'"):
        load_config(None, ["rollout.mode=ray", "rollout.in_flight_weights=sometimes"])
    config = load_config(None, ["rollout.mode=ray", "rollout.in_flight_weights=recompute_prefix"])
    assert config.rollout.in_flight_weights == "recompute_prefix"
