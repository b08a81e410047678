"""The greedy moves of the FrozenLake tool agent on the 32 held-out lakes (seeds 0-31), for each
model folder given: its wins and its most common move sequences.

    PYTHONPATH=. python benchmarks/results/frozenlake_tool_agent_60min_seed0/greedy_moves.py \
        runs/frozenlake-tool-agent-60min/checkpoints/step-66/model
"""

from __future__ import annotations

import collections
import json
import sys

from examples.tool_agents import frozen_lake
from trainer.agents.agent_episodes import AgentEpisodes
from trainer.agents.gateway import Gateway
from trainer.generation.continuous import ContinuousGenerator
from trainer.models import load_model
from trainer.serving.engine import ServingEngine

ENV_KWARGS = {"answer_format": {"tag": None}, "action_format": "tools"}

for name in sys.argv[1:]:
    model, tokenizer = load_model(name)
    engine = ServingEngine(ContinuousGenerator(model, tokenizer, max_batch_size=32))
    with Gateway(engine, tool_call_format="smollm2", record_choices=256) as gateway:
        episodes = AgentEpisodes(
            frozen_lake, "FrozenLake-v0", gateway, env_kwargs=ENV_KWARGS, concurrency=32
        )
        batch = episodes.play(list(range(32)), greedy=True)
    engine.close()
    plans: collections.Counter[str] = collections.Counter()
    for outcome in batch.outcomes:
        moves = [
            json.loads(call["function"]["arguments"])["direction"]
            for recorded in outcome.session.calls
            for call in recorded.reply_message.get("tool_calls", [])
        ]
        plans[" ".join(moves)] += 1
    wins = sum(o.trajectory.episode_return > 0 for o in batch.outcomes)
    print(f"{name}: {wins} of 32 won; {len(plans)} distinct move sequences")
    for plan, count in plans.most_common():
        print(f"  {count:2d} x {plan}")
