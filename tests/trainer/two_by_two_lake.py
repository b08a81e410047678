"""The training setting the pipeline tests share: the tiny random model on a 2x2 lake, replies
constrained to the action words, so returns differ inside a group and a step moves the weights."""

TWO_BY_TWO_LAKE = [
    "model.name=tiny-random",
    "env.id=FrozenLake-v0",
    "env.kwargs={desc: [SF, FG], answer_format: {tag: null}}",
    "env.constrain_to_actions=true",
    "env.group_size=4",
    "env.groups_per_step=2",
    "env.max_turns=3",
    "sampling.max_new_tokens=1",
    "optim.lr=1e-3",
    "train.loggers=[jsonl]",
]
