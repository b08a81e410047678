"""Typed training configuration: YAML presets, CLI flags and ``--set key=value`` overrides.

Every field is checked by pydantic; a bad value becomes one ``ConfigError`` line naming the
field, what was given and what is allowed, never a traceback.

Example:
    >>> overrides = ["env.context=window", "train.steps=3"]
    >>> config = load_config("sokoban", overrides)
    >>> config.env.context, config.train.steps, config.env.id
    ('window', 3, 'SimpleSokoban-v0')
    >>> load_config("sokoban", overrides=["env.context=sideways"])
    Traceback (most recent call last):
    ...
    trainer.config.ConfigError: env.context: Input should be 'full' or 'window' (got 'sideways')
"""

from __future__ import annotations

import difflib
import typing
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from trainer.algorithms.registry import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    UnknownAlgorithmError,
    algorithm_spec,
)
from trainer.strategy_registry import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    UnknownStrategyError,
    strategy_spec,
)


class ConfigError(ValueError):
    """A configuration value a user gave is not allowed; the message says which and why."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoraConfig(_Section):
    r: int = Field(8, gt=0)
    alpha: int = Field(16, gt=0)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] = ["q_proj", "v_proj"]


class ModelConfig(_Section):
    """The policy: ``name`` (a known name or a Hugging Face folder), with LoRA adapters or
    ``trainable_layers``: train only the last N decoder layers and the final norm, the
    embeddings (and the LM head tied to them) and every earlier layer frozen, so the backward
    pass stops at the first trained layer (``None``: train every weight)."""

    name: str = "smollm2-135m"
    lora: LoraConfig | None = None
    trainable_layers: int | None = Field(None, gt=0)


class MixMemberConfig(_Section):
    """One member of ``env.mix`` given with its own ``rollenv.make`` kwargs."""

    ratio: float = Field(gt=0.0)
    kwargs: dict[str, Any] = {}


MIXTURE_ID = "Mixture-v0"


class CurriculumConfig(_Section):
    """``env.curriculum``: raise the integer ``env.kwargs[kwarg]`` by ``increment`` each time
    the training episodes' sampled success, averaged over the last ``window`` steps, reaches
    ``raise_at``, up to ``stop`` (:class:`trainer.curriculum.Curriculum`). The evaluation
    envs keep ``env.eval_kwargs``."""

    kwarg: str
    stop: int
    increment: int = Field(1, gt=0)
    raise_at: float = Field(0.4, gt=0.0, le=1.0)
    window: int = Field(5, gt=0)


class EnvConfig(_Section):
    """The env of a run: ``id`` with ``kwargs``, or a mix of envs.

    ``mix`` trains on ``Mixture-v0``: each group plays one member, picked from its seed with
    the given ratios (normalised), and metrics are also reported per member. A value is a ratio
    or ``{ratio: r, kwargs: {...}}`` (that member's ``rollenv.make`` kwargs); e.g. in YAML
    ``mix: {MathVerify-v0: 0.4, CodeSandbox-v0: 0.3, SimpleSokoban-v0: {ratio: 0.3, kwargs:
    {max_actions: 20}}}``. With a mix, ``id`` is left unset (it becomes ``Mixture-v0``) and
    ``kwargs`` empty.

    ``eval_kwargs`` are laid over ``kwargs`` for the evaluation episodes only, as RAGEN and
    verl-agent configure their train and validation envs apart: a curriculum can train on
    short puzzles (``kwargs: {max_solution_length: 4}``) and still be measured on the env's
    own distribution (``eval_kwargs: {max_solution_length: 10}``).
    """

    id: str = "Sokoban-v0"
    kwargs: dict[str, Any] = {}
    eval_kwargs: dict[str, Any] = {}
    mix: dict[str, float | MixMemberConfig] | None = None
    group_size: int = Field(8, gt=0)
    groups_per_step: int = Field(4, gt=0)
    max_turns: int = Field(10, gt=0)
    context: Literal["full", "window"] = "full"
    window: int = Field(2, ge=0)
    max_context_tokens: int = Field(2048, gt=0)
    constrain_to_actions: bool = False
    reply_prefix: str = ""
    curriculum: CurriculumConfig | None = None

    @field_validator("mix", mode="before")
    @classmethod
    def _mix_shape(cls, mix: Any) -> Any:
        if mix is None:
            return None
        if not isinstance(mix, dict) or not mix:
            raise ValueError(
                "must map env ids to ratios, e.g. {FrozenLake-v0: 0.5, "
                f"SimpleSokoban-v0: 0.5}} (got {mix!r})"
            )
        for env_id, value in mix.items():
            ratio = value.get("ratio") if isinstance(value, dict) else value
            if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
                raise ValueError(
                    f"{env_id!r} must be a ratio > 0 or {{ratio: r, kwargs: {{...}}}} "
                    f"(got {value!r})"
                )
        return mix

    @model_validator(mode="after")
    def _mix_replaces_id(self) -> EnvConfig:
        if self.mix is not None:
            if "id" in self.model_fields_set and self.id != MIXTURE_ID:
                raise ValueError(
                    f"env.mix trains on {MIXTURE_ID} and ignores env.id: leave env.id unset or "
                    f"set it to {MIXTURE_ID} (got {self.id!r})"
                )
            self.id = MIXTURE_ID
            if self.kwargs:
                raise ValueError(
                    "env.kwargs belongs to env.id: with env.mix give a member's kwargs as "
                    "env.mix.<id>: {ratio: r, kwargs: {...}}"
                )
            if self.eval_kwargs:
                raise ValueError(
                    "env.eval_kwargs belongs to env.id: a mix is evaluated with its members' "
                    "own kwargs (env.mix.<id>: {ratio: r, kwargs: {...}}), there are no "
                    "evaluation-only ones"
                )
        return self

    @model_validator(mode="after")
    def _curriculum_knob(self) -> EnvConfig:
        curriculum = self.curriculum
        if curriculum is None:
            return self
        if self.mix is not None:
            raise ValueError(
                "env.curriculum raises one of env.kwargs, which a mix does not have: train "
                "one env id with it"
            )
        start = self.kwargs.get(curriculum.kwarg)
        if isinstance(start, bool) or not isinstance(start, int):
            raise ValueError(
                f"env.curriculum.kwarg={curriculum.kwarg!r} must name an integer of env.kwargs, "
                f"its starting value (env.kwargs has {sorted(self.kwargs) or 'nothing'}), e.g. "
                f"env.kwargs.{curriculum.kwarg}=4"
            )
        if curriculum.stop <= start:
            raise ValueError(
                f"env.curriculum.stop={curriculum.stop} must be above the starting value "
                f"env.kwargs.{curriculum.kwarg}={start}"
            )
        return self

    @property
    def make_kwargs(self) -> dict[str, Any]:
        """The ``rollenv.make`` kwargs of ``id``: ``kwargs``, or ``{"mix": ...}`` with a mix."""
        if self.mix is None:
            return dict(self.kwargs)
        mix = {
            env_id: value.model_dump() if isinstance(value, MixMemberConfig) else value
            for env_id, value in self.mix.items()
        }
        return {"mix": mix}

    @property
    def eval_make_kwargs(self) -> dict[str, Any]:
        """The ``rollenv.make`` kwargs of the evaluation episodes: ``eval_kwargs`` over
        :attr:`make_kwargs`."""
        return {**self.make_kwargs, **self.eval_kwargs}


class SamplingConfig(_Section):
    """How replies are sampled. ``stop``: strings that end a reply once its text holds one
    (kept in the reply, as vLLM's ``include_stop_str_in_output``)."""

    max_new_tokens: int = Field(64, gt=0)
    temperature: float = Field(1.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    top_k: int = Field(0, ge=0)
    stop: list[str] = []

    @field_validator("stop")
    @classmethod
    def _stop_strings(cls, stop: list[str]) -> list[str]:
        if not all(stop):
            raise ValueError(f"must be non-empty strings, e.g. ['</answer>'] (got {stop!r})")
        return stop


class AlgorithmConfig(_Section):
    # a name in trainer.algorithms.ALGORITHMS (checked when the config is validated, so an
    # estimator registered after this module was imported is allowed)
    name: str = DEFAULT_ALGORITHM
    gamma: float = Field(0.95, ge=0.0, le=1.0)
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0)
    step_weight: float = 1.0
    std_normalize: bool = True
    starpo_s_keep: float | None = Field(None, gt=0.0, le=1.0)
    # leave out of the update every episode whose advantage is 0 on all its tokens (a group of
    # equal returns): it adds no gradient, only compute, and under token-mean it dilutes the
    # informative tokens' step (DAPO's filter of uniform groups, without resampling). With
    # entropy_coef > 0 the entropy term then covers the kept episodes' replies only
    skip_zero_advantage: bool = False
    # ROLL's and DAPO's dynamic sampling: a group whose returns are all equal is dropped and
    # new groups (new prompts) are rolled out in its place, up to this many extra rounds a step
    dynamic_sampling: bool = False
    dynamic_sampling_max_rounds: int = Field(3, ge=1)
    clip_low: float = Field(0.2, ge=0.0)
    clip_high: float = Field(0.2, ge=0.0)
    dual_clip: float | None = Field(3.0, gt=1.0)
    aggregation: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = "token-mean"
    kl_coef: float = Field(0.0, ge=0.0)
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    kl_mode: Literal["loss", "reward"] = "loss"
    entropy_coef: float = Field(0.0, ge=0.0)
    value_coef: float = Field(0.5, ge=0.0)
    # "generator": PPO's old log-probs are those the generator reported while sampling (the
    # behaviour policy's, equal to the trainer's up to float error; a test checks it), which
    # saves one forward pass over every sequence per step; "recompute" runs that pass. PPO
    # always runs it: the same pass gives the critic's values.
    old_logprobs: Literal["recompute", "generator"] = "recompute"
    # with env.constrain_to_actions: score each reply under the softmax over the action words'
    # tokens, the distribution it was sampled from, instead of the whole vocabulary (an update
    # then only moves probability among the words)
    score_actions_only: bool = False
    ppo_epochs: int = Field(1, gt=0)
    minibatches: int = Field(1, gt=0)

    @field_validator("name")
    @classmethod
    def _registered_algorithm(cls, name: str) -> str:
        try:
            return algorithm_spec(name).name
        except UnknownAlgorithmError as error:
            raise ValueError(str(error)) from None


class GenerationConfig(_Section):
    # "vllm" / "sglang": those engines on a CUDA GPU, built from the policy and sent its
    # weights after every update: in the trainer's process, sharing its GPU (rollout.mode=local),
    # or in each generator actor, on GPUs of their own (rollout.mode=ray, generator_gpus > 0)
    backend: Literal["continuous", "hf", "vllm", "sglang"] = "continuous"
    max_batch_size: int = Field(64, gt=0)
    # "bfloat16": the continuous engine's weights in bfloat16 (faster decoding on CPUs with
    # AMX / AVX512-BF16); its log-probs are no longer the float32 trainer's
    dtype: Literal["float32", "bfloat16"] = "float32"
    # the continuous engine's decode matmuls on MKL-packed float32 weights: faster, one more
    # copy of the weights per row bucket in use (8, 32, ... up to max_batch_size)
    packed_weights: bool = True
    # vllm / sglang: the share of the GPU's memory the engine takes (the trainer shares the GPU)
    gpu_memory_utilization: float = Field(0.3, gt=0.0, le=1.0)
    # vllm: free the engine's GPU memory (weights to host, key/value cache dropped) after each
    # rollout, while the trainer updates on the same GPU (ROLL's colocation)
    offload: bool = False
    # vllm / sglang: more arguments for the engine's constructor, e.g. {enforce_eager: true}
    engine_args: dict[str, Any] = {}

    def engine_options(self) -> dict[str, object]:
        """Keyword arguments for the backend beyond ``max_batch_size`` (the non-defaults)."""
        options: dict[str, object] = {}
        if self.backend in ("vllm", "sglang"):
            # the GPU engines' default is their own ("auto": the checkpoint's dtype); ours is
            # the trainer's float32, whose log-probs are the trainer's
            options["dtype"] = self.dtype
            share = "gpu_memory_utilization" if self.backend == "vllm" else "mem_fraction_static"
            options[share] = self.gpu_memory_utilization
            if self.offload:
                options["offload"] = True
            options.update(self.engine_args)
        elif self.dtype != "float32":
            options["dtype"] = self.dtype
        if self.backend == "continuous" and not self.packed_weights:
            options["packed_weights"] = False
        return options


class RolloutConfig(_Section):
    """Where episodes run. ``local``: one env manager in this process plays each step's groups
    in lockstep. ``ray``: env manager actors play every episode on its own against a fleet of
    generator actors (ROLL's agentic pipeline), on a local Ray cluster or ``ray_address``'s."""

    mode: Literal["local", "ray"] = "local"
    ray_address: str | None = None  # None: start a local cluster (mode=ray)
    env_managers: int = Field(2, gt=0)
    envs_per_manager: int = Field(8, gt=0)
    env_manager_cpus: float = Field(0.25, ge=0.0)
    # custom Ray resources each env manager needs, e.g. {env_node: 0.1} to place them on nodes
    # that offer that resource
    env_manager_resources: dict[str, float] = {}
    generator_replicas: int = Field(1, gt=0)
    generator_cpus: float = Field(1.0, ge=0.0)
    # GPUs each generator replica reserves; above 0 it generates on CUDA (a fraction shares a
    # GPU, e.g. 0.5 beside a train worker's train.worker_gpus=0.5 on a one-GPU machine)
    generator_gpus: float = Field(0.0, ge=0.0)
    generator_threads: int | None = Field(None, gt=0)
    weight_bucket_mb: float = Field(64.0, gt=0.0)
    # ROLL's group semantics: group_size + redundancy episodes start, the first group_size kept
    redundancy: int = Field(0, ge=0)
    # rollouts for step n+k run while step n trains; a group started more than k weight
    # versions ago is dropped, never trained on (0: rollout and training alternate)
    async_generation_ratio: int = Field(0, ge=0)
    episode_timeout_s: float | None = Field(None, gt=0.0)
    max_retries: int = Field(2, ge=0)


class OptimConfig(_Section):
    lr: float = Field(1e-5, gt=0.0)
    weight_decay: float = Field(0.0, ge=0.0)
    grad_clip: float | None = Field(1.0, gt=0.0)
    micro_batch_tokens: int = Field(4096, gt=0)
    # a checkpoint folder (".../checkpoints/step-N") whose AdamW moments the run starts from, at
    # this run's lr: a fresh AdamW's first steps move every weight by about lr whatever the size
    # of its gradient; with the moments of the warm start, small gradients make small moves
    moments_from: str | None = None


class TrainConfig(_Section):
    steps: int = Field(100, gt=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    # a name in trainer.strategies.STRATEGIES: this process, or a Ray group of `workers` train
    # workers (checked when the config is validated, as algorithm.name is)
    strategy: str = DEFAULT_STRATEGY
    workers: int = Field(1, gt=0)
    # Ray resources of each train worker (GPUs: 1 each where the cluster has them, if None)
    worker_cpus: float = Field(1.0, ge=0.0)
    worker_gpus: float | None = Field(None, ge=0.0)
    worker_resources: dict[str, float] = {}
    # memory the memory plan may count on per worker, in GiB (None: this machine's RAM shared by
    # the workers, or one GPU's memory)
    worker_memory_gib: float | None = Field(None, gt=0.0)
    # ZeRO, for the strategies whose memory layout has a zero_stage_setting
    zero_stage: int = Field(2, ge=1, le=3)
    offload_optimizer: bool = False
    offload_params: bool = False
    # bfloat16 compute with float32 master weights where the device supports it, for the
    # strategies that support mixed precision
    mixed_precision: bool = False
    activation_checkpointing: bool = False
    # every training process returns freed tensors of 1 MiB or more to the OS at once (glibc's
    # mmap threshold, fixed): less peak memory, slower steps (trainer.strategies.host_memory)
    return_freed_memory: bool = False
    # the train workers' C allocator: jemalloc (LD_PRELOAD in each worker's runtime_env) keeps
    # less freed memory resident than glibc (trainer.strategies.allocator); a strategy that
    # trains in this process takes it only if this process was started with it
    allocator: Literal["default", "jemalloc"] = "default"
    # model parallelism, for the strategies that split the model
    tensor_parallel: int = Field(1, gt=0)
    pipeline_parallel: int = Field(1, gt=0)
    context_parallel: int = Field(1, gt=0)
    seed: int = 0
    output_dir: str = "runs/latest"
    # a greedy evaluation on `eval_groups` held-out seeds every N RL steps (0: none by steps)
    eval_every: int = Field(0, ge=0)
    # ... and every this many minutes of the run, in the warm start and in RL (None: none by time)
    eval_every_minutes: float | None = Field(None, gt=0.0)
    # evaluate the starting policy first (verl: val_before_train): the base model before a warm
    # start, the warm-started or resumed model before RL otherwise
    eval_before: bool = False
    # the whole run's budget: warm start, RL and evaluations, over every session (--resume
    # counts on). Past it the run evaluates, saves and ends (None: train.steps alone end it)
    max_minutes: float | None = Field(None, gt=0.0)
    eval_groups: int = Field(16, gt=0)
    checkpoint_every: int = Field(10, ge=0)
    loggers: list[Literal["tensorboard", "jsonl", "wandb", "swanlab"]] = ["tensorboard", "jsonl"]

    @field_validator("strategy")
    @classmethod
    def _registered_strategy(cls, name: str) -> str:
        try:
            return strategy_spec(name).name
        except UnknownStrategyError as error:
            raise ValueError(str(error)) from None


class SftConfig(_Section):
    before_rl: bool = False
    episodes: int = Field(256, gt=0)
    epochs: int = Field(1, gt=0)
    lr: float = Field(1e-4, gt=0.0)
    batch_sequences: int = Field(16, gt=0)
    # stop the warm start after this long, its evaluations included, even if episodes are left
    # (None: the whole run's train.max_minutes is its only time limit); below train.max_minutes
    max_minutes: float | None = Field(None, gt=0.0)
    # a warm-start checkpoint this often (and on Ctrl-C), so --resume loses at most this much
    checkpoint_minutes: float = Field(5.0, gt=0.0)


class RewardsConfig(_Section):
    """Reward workers (:class:`~trainer.rewards.pool.RewardPool`): with ``pool`` on, the env is
    made with ``defer_reward=True`` and its answers are scored by Ray actors while the env
    manager goes on generating; an answer the workers cannot score is left out of the update
    and counted (``train/unscored_episodes``)."""

    pool: bool = False
    min_workers: int = Field(1, gt=0)  # rule workers (verifiers), grown when requests wait
    max_workers: int = Field(2, gt=0)
    worker_cpus: float = Field(0.5, ge=0.0)
    worker_gpus: float = Field(0.0, ge=0.0)
    worker_resources: dict[str, float] = {}
    judge: str | None = None  # a model name or openai:URL#MODEL
    judge_workers: int = Field(1, gt=0)  # each holds the judge model
    judge_worker_cpus: float = Field(1.0, ge=0.0)
    judge_worker_gpus: float = Field(0.0, ge=0.0)
    judge_timeout_s: float = Field(60.0, gt=0.0)
    rule_deadline_s: float = Field(10.0, gt=0.0)
    sandbox_workers: int = Field(1, gt=0)  # code run against tests, started on first use
    sandbox_worker_cpus: float = Field(0.5, ge=0.0)
    sandbox_deadline_s: float = Field(60.0, gt=0.0)


class Config(_Section):
    """Everything a run needs; ``roll-agent train`` builds one from a preset and overrides."""

    model: ModelConfig = ModelConfig()
    env: EnvConfig = EnvConfig()
    sampling: SamplingConfig = SamplingConfig()
    generation: GenerationConfig = GenerationConfig()
    rollout: RolloutConfig = RolloutConfig()
    algorithm: AlgorithmConfig = AlgorithmConfig()
    optim: OptimConfig = OptimConfig()
    train: TrainConfig = TrainConfig()
    sft: SftConfig = SftConfig()
    rewards: RewardsConfig = RewardsConfig()

    @model_validator(mode="after")
    def _consistent(self) -> Config:
        if self.model.trainable_layers is not None:
            if self.model.lora is not None:
                raise ValueError(
                    "model.trainable_layers freezes whole layers and model.lora trains adapters "
                    "only: set one of them"
                )
            if not STRATEGIES[self.train.strategy].trains_selected_layers:
                able = " or ".join(
                    name for name, spec in STRATEGIES.items() if spec.trains_selected_layers
                )
                raise ValueError(
                    f"model.trainable_layers is only trained by train.strategy={able} (got "
                    f"{self.train.strategy}): drop it, or use train.strategy={able}"
                )
        whole, warm = self.train.max_minutes, self.sft.max_minutes
        if self.sft.before_rl and whole is not None and warm is not None and warm >= whole:
            raise ValueError(
                f"sft.max_minutes ({warm:g}) is the warm start's share of the whole run's "
                f"train.max_minutes ({whole:g}): set it below, or sft.max_minutes=null"
            )
        algorithm = ALGORITHMS[self.algorithm.name]
        if algorithm.needs_full_context and self.env.context != "full":
            raise ValueError(
                f"algorithm.name={algorithm.name} scores whole episodes"
                + (" with a critic" if algorithm.needs_critic else "")
                + ": set env.context=full"
            )
        gpu_engine = self.generation.backend in ("vllm", "sglang")
        if gpu_engine and self.rollout.mode == "ray" and self.rollout.generator_gpus <= 0:
            raise ValueError(
                f"generation.backend={self.generation.backend} with rollout.mode=ray runs in the "
                "generator actors, on GPUs of their own: set rollout.generator_gpus (1 for a "
                "whole GPU each)"
            )
        if self.algorithm.score_actions_only and not self.env.constrain_to_actions:
            raise ValueError(
                "algorithm.score_actions_only scores replies among the action words that "
                "constrained decoding samples: set env.constrain_to_actions=true"
            )
        if self.env.constrain_to_actions and self.generation.backend == "sglang":
            raise ValueError(
                "generation.backend=sglang cannot restrict sampling to the action words: set "
                "env.constrain_to_actions=false, or use the continuous or vllm backend"
            )
        if (
            self.env.constrain_to_actions
            and self.algorithm.old_logprobs == "generator"
            and self.generation.backend == "vllm"
            and not self.algorithm.score_actions_only
        ):
            # vLLM reports log-probs after masking to the allowed tokens; our backends report
            # whichever the trainer scores (SamplingParams.logprobs_among_allowed)
            raise ValueError(
                "vLLM reports the log-probs of the action words' distribution it samples "
                "from: with algorithm.old_logprobs=generator set "
                "algorithm.score_actions_only=true, or old_logprobs=recompute"
            )
        if self.generation.engine_args and not gpu_engine:
            raise ValueError(
                "generation.engine_args are passed to a vllm or sglang engine: set "
                "generation.backend=vllm or sglang, or remove them"
            )
        if self.generation.offload and self.generation.backend != "vllm":
            raise ValueError(
                "generation.offload puts vLLM to sleep between rollouts: it needs "
                "generation.backend=vllm"
            )
        if self.generation.offload and self.rollout.mode != "local":
            raise ValueError(
                "generation.offload frees the GPU that vLLM shares with the trainer: it needs "
                "rollout.mode=local (on Ray, the generators have GPUs of their own)"
            )
        if self.generation.dtype == "bfloat16":
            if self.generation.backend == "hf":
                raise ValueError(
                    "generation.dtype=bfloat16 needs generation.backend=continuous, vllm or sglang"
                )
            if self.algorithm.old_logprobs == "generator":
                raise ValueError(
                    "generation.dtype=bfloat16 samples from a rounded copy of the policy: set "
                    "algorithm.old_logprobs=recompute"
                )
        if self.env.curriculum is not None and self.rollout.mode != "local":
            raise ValueError(
                "env.curriculum needs rollout.mode=local (the Ray env manager actors keep the "
                "kwargs they were started with)"
            )
        if self.algorithm.dynamic_sampling and self.rollout.mode != "local":
            raise ValueError(
                "algorithm.dynamic_sampling needs rollout.mode=local (the Ray rollouts do not "
                "replace uniform groups yet)"
            )
        if self.train.allocator == "jemalloc" and self.train.return_freed_memory:
            raise ValueError(
                "train.return_freed_memory sets glibc's malloc, which train.allocator=jemalloc "
                "replaces: set one of them"
            )
        if self.rewards.min_workers > self.rewards.max_workers:
            raise ValueError("rewards.min_workers is larger than rewards.max_workers")
        if self.rollout.mode == "local":
            ray_only = {"redundancy": 0, "async_generation_ratio": 0, "ray_address": None}
            for name, default in ray_only.items():
                if getattr(self.rollout, name) != default:
                    raise ValueError(f"rollout.{name} needs rollout.mode=ray")
        if self.algorithm.skip_zero_advantage:
            other_terms = {
                f"algorithm.name={algorithm.name} ("
                + ("its critic's loss" if algorithm.needs_critic else "its loss uses every episode")
                + ")": algorithm.needs_every_episode,
                "algorithm.kl_coef > 0 with kl_mode=loss": self.algorithm.kl_coef > 0
                and self.algorithm.kl_mode == "loss",
            }
            blocking = [name for name, on in other_terms.items() if on]
            if blocking:
                raise ValueError(
                    "algorithm.skip_zero_advantage drops episodes that still have a loss term: "
                    + ", ".join(blocking)
                )
        if self.algorithm.minibatches > self.env.group_size * self.env.groups_per_step:
            raise ValueError("algorithm.minibatches is larger than the number of episodes per step")
        return self


def preset_names() -> list[str]:
    """Names of the YAML presets shipped in ``trainer/presets``."""
    folder = resources.files("trainer") / "presets"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _read_preset(name: str) -> dict[str, Any]:
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return yaml.safe_load(path.read_text()) or {}
    if name not in preset_names():
        raise ConfigError(
            f"no preset {name!r}; presets: {', '.join(preset_names())} (or a .yaml file)"
        )
    return (
        yaml.safe_load((resources.files("trainer") / "presets" / f"{name}.yaml").read_text()) or {}
    )


def _set_dotted(tree: dict[str, Any], assignment: str) -> None:
    key, sep, raw = assignment.partition("=")
    if not sep or not key:
        raise ConfigError(f"--set expects key=value (e.g. train.steps=10), got {assignment!r}")
    *parents, leaf = key.strip().split(".")
    node = tree
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {key}: {part!r} is a value, not a section")
        node = child
    node[leaf] = yaml.safe_load(raw) if raw.strip() else ""


def _section_model(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model of the section that holds ``loc``'s last part (``Config`` for a section's name);
    ``None`` where the path leaves the models (a dict, a list's item)."""
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return None
        candidates = [field.annotation, *typing.get_args(field.annotation)]  # X | None too
        models = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
        if not models:
            return None
        model = models[0]
    return model


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    """``unknown field``/``unknown section``, with the closest names or, if none is close, all."""
    model = _section_model(loc)
    top = model is Config  # every field of Config is a section
    message = "unknown section" if top else "unknown field"
    if model is None or not loc or not isinstance(loc[-1], str):
        return message
    names = list(model.model_fields)
    prefix = "".join(f"{part}." for part in loc[:-1])
    by_lower = {name.lower(): name for name in names}
    close = difflib.get_close_matches(loc[-1].lower(), list(by_lower), n=3, cutoff=0.6)
    if close:
        return f"{message} (did you mean {' or '.join(prefix + by_lower[c] for c in close)}?)"
    owner = "sections" if top else f"{prefix.rstrip('.')}'s fields"
    return f"{message} ({owner}: {', '.join(names)})"


def _format(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "config"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = _unknown_key(tuple(item["loc"]))
        got = (
            ""
            if item["type"] in ("extra_forbidden", "value_error")
            else f" (got {item['input']!r})"
        )
        lines.append(f"{where}: {message}{got}")
    return "; ".join(lines)


def build_config(tree: dict[str, Any]) -> Config:
    """Validates a nested dict into a ``Config``; raises ``ConfigError`` with a clear message."""
    try:
        return Config.model_validate(tree)
    except ValidationError as error:
        raise ConfigError(_format(error)) from None


def load_config(preset: str | None, overrides: list[str] | None = None) -> Config:
    """A preset (name or YAML file; ``None``: the defaults) with ``key=value`` overrides applied."""
    tree = {} if preset is None else _read_preset(preset)
    for assignment in overrides or []:
        _set_dotted(tree, assignment)
    return build_config(tree)
