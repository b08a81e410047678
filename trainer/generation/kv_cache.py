"""``SlotKVCache``: key/value rows that outlive a request, so the next turn reuses them.

The cache is a fixed number of *rows* (slots), each holding the keys and values of one token
sequence for every layer, plus the token ids themselves. Rows ``[0, active)`` are the requests
being generated now (contiguous, so one decode step reads them as a view, without a copy);
rows past ``active`` are idle and keep what their last request computed. A new prompt starts
from the row sharing its longest prefix: turn k+1 of an episode starts with turn k's prompt
and reply, so only the new observation is run through the model.

Example:
    >>> import torch
    >>> cache = SlotKVCache(layers=1, rows=3, kv_heads=1, head_dim=2, capacity=8)
    >>> row, shared = cache.admit([5, 6, 7])
    >>> ids = torch.tensor([5, 6, 7])
    >>> cache.write_tokens(torch.tensor([row] * 3), torch.arange(3), ids)
    >>> cache.release(row)  # returns the row whose request moved into its place
    0
    >>> cache.admit([5, 6, 9, 9])  # shares [5, 6] with the idle row, which it takes over
    (0, 2)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["KEPT_TAIL", "SlotKVCache"]

#: An idle row whose tokens go on more than this past the prefix a new prompt shares keeps
#: them (the prefix is copied to another row); with at most this many, the prompt takes the row.
#: Measured on ``benchmarks/serve_load.py``'s request mix, one request at a time (prompts of
#: 38, 98 and 188 tokens sharing the chat template's system message and a preamble): after the
#: first three, 8-9 prompt tokens computed per request, against 14, 74 and 104 when the shared
#: row was overwritten.
KEPT_TAIL = 32


def _grown(tensor: torch.Tensor, dim: int, size: int, fill: float = 0) -> torch.Tensor:
    """``tensor`` extended along ``dim`` to ``size``, the new part ``fill``: one allocation,
    filled, then the old part copied in. (``torch.cat`` with a filled block allocates that
    block, then everything again; freshly touched memory is what growing costs on a VM.)"""
    shape = list(tensor.shape)
    shape[dim] = size
    grown = tensor.new_full(shape, fill)
    grown.narrow(dim, 0, tensor.shape[dim]).copy_(tensor)
    return grown


class SlotKVCache:
    """Per-layer key/value tensors of shape ``(rows, kv_heads, capacity, head_dim)``.

    Args:
        layers: transformer layers.
        rows: most sequences the cache holds at once (running plus idle, kept for reuse); 8
            rows are allocated first and doubled as more are needed, straight to ``rows`` once
            doubling would leave fewer than that many to go (64 -> 129, not 128 -> 129), so
            memory follows use.
        kv_heads: key/value heads per layer.
        head_dim: size of one head.
        capacity: tokens per row to start with; grows (by half) when a sequence needs more.
        max_capacity: the most tokens a row may ever hold (the model's context length).
        dtype: dtype of keys and values.
        device: where they live.
        preallocate: allocate ``rows`` rows of ``max_capacity`` tokens now (zeroed, so
            resident at once), and never grow: a server's memory plan. Without it the cache
            starts small and grows with use.
    """

    def __init__(
        self,
        *,
        layers: int,
        rows: int,
        kv_heads: int,
        head_dim: int,
        capacity: int = 512,
        max_capacity: int = 1 << 20,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
        preallocate: bool = False,
    ) -> None:
        if rows < 2:
            raise ValueError(f"a cache needs at least 2 rows, got {rows}")
        self.max_rows, self.max_capacity = rows, max_capacity
        self.rows = rows if preallocate else min(rows, 8)
        self.capacity = max_capacity if preallocate else min(capacity, max_capacity)
        shape = (self.rows, kv_heads, self.capacity, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        # token id at each cached position, -1 where nothing is cached
        self.tokens = torch.full((self.rows, self.capacity), -1, dtype=torch.long, device=device)
        self.lengths = [0] * self.rows
        self.last_used = [0] * self.rows
        # a running row whose keys and values older weights computed: forgotten at release
        self.stale = [False] * self.rows
        self.active = 0
        self._clock = 0
        self._call_started = 0

    def clear(self, keep_running: bool = False) -> None:
        """Forgets every cached prefix (after a weight update they are stale).

        Args:
            keep_running: keep the running rows: their requests go on from their next token
                on the keys and values the old weights computed, and the rows are forgotten
                when they are released instead of kept for reuse.

        Raises:
            RuntimeError: requests are running and ``keep_running`` is false.
        """
        if self.active and not keep_running:
            raise RuntimeError("cannot clear the cache while requests are running")
        with torch.inference_mode():  # the tensors may have been (re)made in inference mode
            self.tokens[self.active :].fill_(-1)
        self.lengths[self.active :] = [0] * (self.rows - self.active)
        self.stale[: self.active] = [True] * self.active

    def begin_call(self) -> None:
        """Marks the start of a generator call (rows written before it are evicted first)."""
        self._call_started = self._clock

    def abandon_running(self) -> None:
        """Forgets the running rows (a call that raised part-way leaves them half written)."""
        for row in range(self.active):
            self.lengths[row] = 0
            self.stale[row] = False
        with torch.inference_mode():
            self.tokens[: self.active] = -1
        self.active = 0

    def ensure_capacity(self, length: int) -> None:
        """Grows every row to hold at least ``length`` tokens."""
        if length <= self.capacity:
            return
        if length > self.max_capacity:
            raise ValueError(
                f"a sequence of {length} tokens exceeds the model's context ({self.max_capacity})"
            )
        # grow by half (not double: at a context of 1024, one token more must not cost 1024
        # positions in every row), in multiples of 64
        new = min(-(-max(length, self.capacity * 3 // 2) // 64) * 64, self.max_capacity)
        for cache in (self.keys, self.values):
            for i, tensor in enumerate(cache):
                cache[i] = _grown(tensor, dim=2, size=new)
        self.tokens = _grown(self.tokens, dim=1, size=new, fill=-1)
        self.capacity = new

    def _shared_prefix(self, prompt: torch.Tensor) -> torch.Tensor:
        """Length of the prefix each row shares with ``prompt`` (never the whole prompt: its
        last token must be run to get the next-token logits)."""
        n = min(len(prompt) - 1, self.capacity)
        if n <= 0:
            return torch.zeros(self.rows, dtype=torch.long)
        same = self.tokens[:, :n] == prompt[:n]
        return same.cumprod(dim=1).sum(dim=1)

    def cached_length(self, tokens: Sequence[int]) -> int:
        """The longest prefix of ``tokens`` some row already holds."""
        if not tokens:
            return 0
        probe = torch.as_tensor([*tokens, -2], dtype=torch.long, device=self.tokens.device)
        return int(self._shared_prefix(probe).max())

    def admit(self, prompt: Sequence[int]) -> tuple[int, int]:
        """Makes row ``active`` (the next running row) ready to extend with ``prompt``.

        It takes the idle row sharing the longest prefix with ``prompt`` when the prompt
        continues all but at most :data:`KEPT_TAIL` of its tokens; otherwise it copies that
        prefix (from an idle or a running row) into the least recently used idle row, so the
        other row keeps its tokens for a later prompt. Either way only the rest of the prompt
        needs computing.

        Returns:
            ``(row, shared)``: the row now holding the request and how many of the prompt's
            leading tokens it already has keys and values for.
        """
        if self.active >= self.max_rows - 1:
            raise RuntimeError("no idle row left: lower the batch size or add rows")
        self.ensure_capacity(len(prompt))
        prompt_t = torch.as_tensor(list(prompt), dtype=torch.long, device=self.tokens.device)
        shared = self._shared_prefix(prompt_t)
        source = int(shared.argmax())
        best = int(shared[source])
        # an idle row is extended in place when the prompt continues (nearly) all it holds, as
        # a conversation's next turn does; a row with more of its own after the shared prefix
        # (another prompt on the same system message) keeps it, and the prefix is copied
        if best > 0 and source >= self.active and self.lengths[source] - best <= KEPT_TAIL:
            target = source
        else:
            idle = range(self.active, self.rows)
            # evict a row an earlier call left rather than grow; grow once every idle row was
            # written during this call (evicting it could throw away what this call needs)
            if self.rows < self.max_rows and all(
                self.lengths[r] and self.last_used[r] > self._call_started for r in idle
            ):
                self._add_rows()
            idle = range(self.active, self.rows)
            target = min(idle, key=lambda r: (self.last_used[r], self.lengths[r]))
        row = self.active
        self.swap(row, target)
        if source == row:
            source = target
        elif source == target:
            source = row
        if best > 0 and source != row:
            for cache in (self.keys, self.values):
                for tensor in cache:
                    tensor[row, :, :best] = tensor[source, :, :best]
            self.tokens[row, :best] = self.tokens[source, :best]
        self.tokens[row, best:] = -1
        self.lengths[row] = best
        self.active += 1
        self._touch(row)
        return row, best

    def write_tokens(
        self, rows: torch.Tensor, positions: torch.Tensor, token_ids: torch.Tensor
    ) -> None:
        """Records which token each newly written key/value position holds."""
        self.tokens[rows, positions] = token_ids
        for row, end in zip(rows.tolist(), (positions + 1).tolist(), strict=True):
            self.lengths[row] = max(self.lengths[row], end)

    def release(self, row: int) -> int:
        """Ends the running request in ``row``; its keys and values stay for reuse.

        The last running row moves into ``row`` to keep running rows contiguous.

        Returns:
            The row index the moved request had (``row`` itself if nothing moved).
        """
        if not 0 <= row < self.active:
            raise ValueError(f"row {row} is not running")
        last = self.active - 1
        self.swap(row, last)
        self.active -= 1
        self._touch(last)
        if self.stale[last]:  # computed partly by older weights: no later prompt may reuse it
            self.lengths[last] = 0
            with torch.inference_mode():
                self.tokens[last] = -1
            self.stale[last] = False
        return last

    def _add_rows(self) -> None:
        # doubling keeps small batches small (every row is capacity x layers of keys and values:
        # 36 MB for SmolLM2 at 768 tokens); the last step goes to the maximum at once, since
        # 128 rows to 129 would copy them all for one more
        new = min(2 * self.rows, self.max_rows)
        if self.max_rows - new < self.rows:
            new = self.max_rows
        pad = new - self.rows
        for cache in (self.keys, self.values):
            for i, tensor in enumerate(cache):
                cache[i] = _grown(tensor, dim=0, size=new)
        self.tokens = _grown(self.tokens, dim=0, size=new, fill=-1)
        self.lengths += [0] * pad
        self.last_used += [0] * pad
        self.stale += [False] * pad
        self.rows = new

    def _touch(self, row: int) -> None:
        self._clock += 1
        self.last_used[row] = self._clock

    def swap(self, a: int, b: int) -> None:
        """Exchanges what rows ``a`` and ``b`` hold (a caller that orders its running rows)."""
        if a == b:
            return
        n = max(self.lengths[a], self.lengths[b])
        if n:
            # three plain copies: several times faster than a gather and a scatter of both rows
            for tensor in (*self.keys, *self.values, self.tokens[:, None]):
                saved = tensor[a, :, :n].clone()
                tensor[a, :, :n] = tensor[b, :, :n]
                tensor[b, :, :n] = saved
        self.lengths[a], self.lengths[b] = self.lengths[b], self.lengths[a]
        self.last_used[a], self.last_used[b] = self.last_used[b], self.last_used[a]
        self.stale[a], self.stale[b] = self.stale[b], self.stale[a]
