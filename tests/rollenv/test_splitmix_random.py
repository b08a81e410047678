"""SplitMixRandom: SplitMix64's published outputs, and random.Random's interface on top."""

from __future__ import annotations

import copy
import pickle
import statistics

import pytest

from rollenv.splitmix_random import SplitMixRandom


def test_the_stream_is_splitmix64():
    # the reference outputs of SplitMix64 (Steele, Lea and Flood, 2014), as Vigna's
    # splitmix64.c and Rosetta Code's SplitMix64 task give them
    zero = SplitMixRandom(0)
    assert [zero.getrandbits(64) for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]
    rosetta = SplitMixRandom(1234567)
    assert [rosetta.getrandbits(64) for _ in range(5)] == [
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ]


def test_fewer_bits_are_the_top_bits_of_a_draw_and_more_join_draws():
    full, short, wide = SplitMixRandom(9), SplitMixRandom(9), SplitMixRandom(9)
    assert short.getrandbits(31) == full.getrandbits(64) >> 33
    high, low = full.getrandbits(64), full.getrandbits(64)
    wide.getrandbits(64)
    assert wide.getrandbits(128) == (high << 64) | low
    assert short.getrandbits(0) == 0
    with pytest.raises(ValueError):
        short.getrandbits(-1)


def test_the_same_seed_gives_the_same_draws_and_another_seed_others():
    def draws(seed):
        rng = SplitMixRandom(seed)
        items = list(range(20))
        rng.shuffle(items)
        return [rng.randrange(1 << 31), rng.random(), rng.choice("abcdef"), items]

    assert draws(5) == draws(5)
    assert draws(5) != draws(6)


def test_reseeding_restarts_the_stream():
    rng = SplitMixRandom(3)
    first = [rng.getrandbits(31) for _ in range(4)]
    rng.seed(3)
    assert [rng.getrandbits(31) for _ in range(4)] == first


def test_floats_and_ranges_are_spread_evenly():
    rng = SplitMixRandom(11)
    floats = [rng.random() for _ in range(20_000)]
    assert all(0.0 <= x < 1.0 for x in floats)
    assert abs(statistics.fmean(floats) - 0.5) < 0.01  # sd of the mean: 0.002
    counts = [0] * 6
    for _ in range(6_000):
        counts[rng.randrange(6)] += 1
    assert all(850 < c < 1150 for c in counts)  # expected 1000, sd about 29


def test_copies_and_pickles_go_on_with_the_same_stream():
    rng = SplitMixRandom(21)
    rng.getrandbits(64)
    for clone in (copy.deepcopy(rng), pickle.loads(pickle.dumps(rng))):
        assert isinstance(clone, SplitMixRandom)
        assert clone.getstate() == rng.getstate()
        assert clone.getrandbits(64) == copy.copy(rng).getrandbits(64)


def test_no_seed_draws_fresh_entropy_and_a_non_integer_seed_is_refused():
    assert SplitMixRandom().getrandbits(64) != SplitMixRandom().getrandbits(64)
    with pytest.raises(TypeError, match="integer seed"):
        SplitMixRandom("seven")
