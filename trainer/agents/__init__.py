"""Agent programs trained unchanged: an OpenAI-compatible gateway that records every token
(:mod:`trainer.agents.gateway`), the sessions it keeps (:mod:`trainer.agents.session`), the
episodes agents play through it (:mod:`trainer.agents.agent_episodes`) and the training samples
made from their calls (:mod:`trainer.agents.segments`)."""
