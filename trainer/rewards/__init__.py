"""Scoring beside the rollouts: ``judge`` (an LLM asked for a verdict) and ``rule``
(rule verifiers in a child process with a deadline). Import the modules themselves: a rule's
child process imports only what it needs."""
