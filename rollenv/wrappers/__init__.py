"""Wrappers for text envs: chat formatting, per-step latency, and Gymnasium's time limit."""

from gymnasium.wrappers import TimeLimit

from rollenv.wrappers.chat import ChatHistory
from rollenv.wrappers.latency import Latency

__all__ = ["ChatHistory", "Latency", "TimeLimit"]
