"""Wrappers for text envs: chat formatting, per-step latency, the seed as a reset option, and
Gymnasium's time limit."""

from gymnasium.wrappers import TimeLimit

from rollenv.wrappers.chat import ChatHistory
from rollenv.wrappers.latency import Latency
from rollenv.wrappers.seed_option import SeedAsResetOption

__all__ = ["ChatHistory", "Latency", "SeedAsResetOption", "TimeLimit"]
