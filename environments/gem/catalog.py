"""The manifest of GEM's ids: which rollenv id each gets, and whether it runs offline (and why not).

Checked in, so that ``register()`` knows every id without importing GEM (which takes a second and
imports reasoning-gym). ``tests/environments/gem_envs/test_catalog.py`` compares it with the
installed GEM: every GEM id is listed, and every runnable one resets and steps offline.

Id mapping (``env_id_for``), in Gymnasium's grammar ``gem/<Name>-v<N>``:

* a game ``game:<Game>-v<N>-<level>`` becomes ``gem/<Game><Level>-v<N>``
  (``game:Sudoku-v0-easy`` -> ``gem/SudokuEasy-v0``,
  ``game:Game2048-v0-extreme-hard`` -> ``gem/Game2048ExtremeHard-v0``);
* a reasoning-gym task ``rg:<name>`` becomes ``gem/<Name>-v0``, the name in CamelCase
  (``rg:basic_arithmetic`` -> ``gem/BasicArithmetic-v0``);
* any other ``<prefix>:<Name>`` becomes ``gem/<Prefix><Name>-v0``
  (``math:GSM8K`` -> ``gem/MathGSM8K-v0``, ``eval:AIME24`` -> ``gem/EvalAIME24-v0``).

What does not run offline, as of gem-llm 0.1.0 with reasoning-gym 0.1.25:

* every ``math:``, ``code:``, ``qa:``, ``logic:`` and ``eval:`` id loads a Hugging Face dataset
  (a download);
* Wordle, Hangman and WordSearch read nltk's ``words`` corpus, a download: they are registered
  when the corpus is installed (``python -m nltk.downloader words``), unavailable otherwise;
* ``game:FifteenPuzzle-v0-random`` and ``game:Crosswords-v0-random`` fail in GEM's own
  constructors, and ``rg:composite`` needs a list of datasets that GEM does not give it;
* four reasoning-gym tasks run but their reward is gameable (``GAMEABLE_TASKS``): not offered;
  one more (``NUMBER_ALONE_TASKS``) is offered with its answers held to a number alone.

Example:
    >>> env_id_for("game:Sudoku-v0-easy"), env_id_for("rg:basic_arithmetic")
    ('gem/SudokuEasy-v0', 'gem/BasicArithmetic-v0')
    >>> BY_GEM_ID["rg:basic_arithmetic"].env_id
    'gem/BasicArithmetic-v0'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

NEEDS_NLTK_WORDS = (
    "needs nltk's 'words' corpus, a download: python -m nltk.downloader words "
    "(and pip install 'rollenv[gem]' && pip install --no-deps gem-llm==0.1.0)"
)
BUG_FIFTEEN_RANDOM = (
    "GEM 0.1.0 bug: FifteenPuzzleEnv(num_rows=None) computes None ** 2 in its constructor "
    "(TypeError)"
)
BUG_CROSSWORDS_RANDOM = (
    "GEM 0.1.0 bug: CrosswordsEnv(hardcore=None) finds no words to place (ValueError)"
)
RG_COMPOSITE = (
    "reasoning-gym's composite dataset mixes the datasets it is given; GEM registers it with "
    "none (AssertionError: Must specify at least one dataset)"
)


@dataclass(frozen=True)
class GameRules:
    """What the adapter needs to know of one GEM game, read off GEM's source.

    Attributes:
        moves: sample moves, as written inside ``\\boxed{}`` (the random policy's replies).
        draws_in_step: whether a step can draw from Python's global ``random`` (2048's new
            tiles, Minesweeper's mines laid at the first reveal): such steps run with the env's
            own RNG state swapped in.
        reset_uses_seed: whether GEM's ``reset`` passes its seed on (Sokoban's room generator
            takes it; unseeded, it draws from fresh entropy). The other games draw only from
            Python's ``random``, so the adapter seeds that itself and resets GEM unseeded (the
            same game as ``reset(seed)``, without reseeding numpy's global generator).
    """

    moves: tuple[str, ...]
    draws_in_step: bool = False
    reset_uses_seed: bool = False


GAMES: dict[str, GameRules] = {
    "GuessTheNumber": GameRules(("5", "1", "8", "25")),
    "Mastermind": GameRules(("1 2", "1 2 3 4", "3 1 4 2", "5 6")),
    "Minesweeper": GameRules(("reveal 0 0", "reveal 2 2", "reveal 4 1", "flag 1 3"), True),
    "Wordle": GameRules(("CAT", "HOUSE", "TRAIN")),
    "FifteenPuzzle": GameRules(("up", "down", "left", "right")),
    "Hangman": GameRules(("E", "A", "S", "T")),
    "Sudoku": GameRules(("1 1 1", "2 3 4", "4 4 2", "3 2 1")),
    "TowerofHanoi": GameRules(("A C", "A B", "B C", "C A", "B A", "C B")),
    "Game2048": GameRules(("up", "down", "left", "right"), True),
    "Sokoban": GameRules(("up", "down", "left", "right"), reset_uses_seed=True),
    "Crosswords": GameRules(("0 0 A", "1 2 E", "2 1 S", "0 3 T")),
    "WordSearch": GameRules(("0 0 0 4", "1 1 5 1", "2 0 2 3")),
}

#: reasoning-gym tasks with no oracle: most carry no reference answer (``entry["answer"] is
#: None``: ``score_answer`` checks a reply by playing it); found by playing the gold-answer oracle
#: on every task (tests/environments/gem_envs/test_oracle.py)
TASKS_WITHOUT_GOLD: dict[str, str] = {
    "boxnet": "no reference answer: plans are checked by simulating them",
    "graph_color": "no reference answer: any proper colouring is accepted",
    "propositional_logic": "no reference answer: any valid conclusion is accepted",
    "rubiks_cube": "no reference answer: move sequences are checked by applying them",
    "rush_hour": "no reference answer: move sequences are checked by playing them",
}

_GAMEABLE = "reasoning-gym 0.1.25's score_answer pays replies that ignore the task "
#: tasks whose reward rollenv.check_reward finds gameable (12 seeds): not offered
GAMEABLE_TASKS: dict[str, str] = {
    "game_of_life_halting": _GAMEABLE + "(any non-empty answer scores 1: it compares "
    "bool(answer) with bool(reference))",
    "figlet_font": _GAMEABLE + "(the question copied back, or padding, scores 5% of the "
    "oracle's return)",
    "rotate_matrix": _GAMEABLE + "(the question copied back scores 8% of the oracle's return)",
    "sentence_reordering": _GAMEABLE + "(the question copied back, or padding, scores 5% of "
    "the oracle's return)",
}

#: tasks whose score_answer reads the first number anywhere in the answer: the adapter scores
#: only an answer that is a number alone (else 0), or the question copied back would score 1
#: wherever its first number is the reference (GsmSymbolic: 1 seed of 12)
NUMBER_ALONE_TASKS = frozenset({"gsm_symbolic"})

Kind = Literal["game", "task", "dataset"]


@dataclass(frozen=True)
class GemEntry:
    """One GEM id and what rollenv makes of it.

    Attributes:
        gem_id: GEM's id (``"game:Sudoku-v0-easy"``, ``"rg:gcd"``).
        env_id: rollenv's id (``"gem/SudokuEasy-v0"``).
        kind: ``"game"`` (multi-turn), ``"task"`` (a reasoning-gym question, one answer) or
            ``"dataset"`` (a Hugging Face dataset: never offline).
        name: the game's name or the reasoning-gym task's name.
        description: one line for listings.
        max_turns: GEM's turn limit (for ``-random`` levels, the largest it draws).
        unavailable: why it cannot run offline; empty if it can.
    """

    gem_id: str
    env_id: str
    kind: Kind
    name: str
    description: str
    max_turns: int
    unavailable: str = ""

    @property
    def rules(self) -> GameRules | None:
        """The game's rules, or ``None`` for a task or dataset."""
        return GAMES.get(self.name) if self.kind == "game" else None

    @property
    def has_gold_answer(self) -> bool:
        """Whether an oracle can reply the reference answer (reasoning-gym tasks only)."""
        return self.kind == "task" and self.name not in TASKS_WITHOUT_GOLD


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-]", text) if part)


def _game_parts(gem_id: str) -> tuple[str, str, str]:
    """A game id's game, version and level (``game:<Game>-v<N>-<level>``)."""
    match = re.fullmatch(r"game:(\w+)-v(\d+)-([\w-]+)", gem_id)
    if match is None:
        raise ValueError(f"not a GEM game id: {gem_id!r} (expected game:<Game>-v<N>-<level>)")
    game, version, level = match.groups()
    return game, version, level


def env_id_for(gem_id: str) -> str:
    """rollenv's id for a GEM id (see the module docstring for the rule)."""
    prefix, _, name = gem_id.partition(":")
    if prefix == "game":
        game, version, level = _game_parts(gem_id)
        return f"gem/{game}{_camel(level)}-v{version}"
    if prefix == "rg":
        return f"gem/{_camel(name)}-v0"
    return f"gem/{_camel(prefix)}{_camel(name)}-v0"


SLOW_SOKOBAN = (
    "too slow to serve: GEM's reverse-play search for 8x8 rooms with 4 boxes held one reset for "
    "minutes here (rollenv's own Sokoban8x8-v0 and LargerSokoban-v0 play the same game)"
)


# the entries' rollenv ids (env_id_for) and names (the game's, the task's) follow from GEM's ids
def _game(gem_id: str, max_turns: int, settings: str, unavailable: str = "") -> GemEntry:
    game, _, level = _game_parts(gem_id)
    description = f"GEM {game}, {level.replace('-', ' ')} ({settings})"
    return GemEntry(gem_id, env_id_for(gem_id), "game", game, description, max_turns, unavailable)


def _task(gem_id: str, unavailable: str = "") -> GemEntry:
    name = gem_id.partition(":")[2]
    description = f"reasoning-gym's {name} through GEM, one answer"
    unavailable = unavailable or GAMEABLE_TASKS.get(name, "")
    return GemEntry(gem_id, env_id_for(gem_id), "task", name, description, 1, unavailable)


def _dataset(gem_id: str, what: str, source: str) -> GemEntry:
    reason = f"needs the Hugging Face dataset {source}, a download"
    description = f"GEM {what} from {source}"
    name = gem_id.partition(":")[2]
    return GemEntry(gem_id, env_id_for(gem_id), "dataset", name, description, 1, reason)


CATALOG: tuple[GemEntry, ...] = (
    # games
    _game("game:GuessTheNumber-v0-hard", 7, "min_number=1, max_number=50"),
    _game("game:GuessTheNumber-v0-easy", 4, "min_number=1, max_number=10"),
    _game("game:GuessTheNumber-v0-random", 9, "size drawn per episode"),
    _game("game:Mastermind-v0-hard", 30, "code_length=4, num_numbers=8, duplicate_numbers=False"),
    _game("game:Mastermind-v0-random", 30, "duplicate_numbers=False"),
    _game("game:Mastermind-v0-easy", 10, "code_length=2, num_numbers=6, duplicate_numbers=False"),
    _game("game:Minesweeper-v0-easy", 25, "rows=5, cols=5, num_mines=5"),
    _game("game:Minesweeper-v0-hard", 64, "rows=8, cols=8, num_mines=12"),
    _game("game:Minesweeper-v0-random", 64, "size drawn per episode"),
    _game("game:Wordle-v0-hard", 25, "word_length=5, only_real_words=True", NEEDS_NLTK_WORDS),
    _game("game:Wordle-v0-easy", 15, "word_length=3, only_real_words=True", NEEDS_NLTK_WORDS),
    _game("game:Wordle-v0-random", 25, "only_real_words=True", NEEDS_NLTK_WORDS),
    _game("game:FifteenPuzzle-v0-random", 50, "size drawn per episode", BUG_FIFTEEN_RANDOM),
    _game("game:FifteenPuzzle-v0-easy", 10, "num_rows=2"),
    _game("game:FifteenPuzzle-v0-hard", 50, "num_rows=4"),
    _game("game:Hangman-v0-random", 20, "hardcore=False", NEEDS_NLTK_WORDS),
    _game("game:Hangman-v0-easy", 10, "word_length=3, hardcore=False", NEEDS_NLTK_WORDS),
    _game("game:Hangman-v0-hard", 20, "word_length=7, hardcore=False", NEEDS_NLTK_WORDS),
    _game("game:Sudoku-v0-easy", 15, "clues=10, scale=4"),
    _game("game:Sudoku-v0-hard", 50, "clues=50, scale=9"),
    _game("game:Sudoku-v0-random", 50, "size drawn per episode"),
    _game("game:TowerofHanoi-v0-easy", 10, "num_disks=3"),
    _game("game:TowerofHanoi-v0-hard", 35, "num_disks=5"),
    _game("game:TowerofHanoi-v0-random", 35, "size drawn per episode"),
    _game("game:Game2048-v0-easy", 50, "target_tile=64"),
    _game("game:Game2048-v0-hard", 50, "target_tile=512"),
    _game("game:Game2048-v0-extreme-hard", 100, "target_tile=2048"),
    _game("game:Game2048-v0-random", 50, "size drawn per episode"),
    _game("game:Sokoban-v0-easy", 20, "dim_room=(6, 6), num_boxes=2"),
    _game("game:Sokoban-v0-hard", 50, "dim_room=(8, 8), num_boxes=4", SLOW_SOKOBAN),
    _game("game:Sokoban-v0-random", 50, "size drawn per episode", SLOW_SOKOBAN),
    _game("game:Crosswords-v0-easy", 30, "hardcore=False, num_words=3"),
    _game("game:Crosswords-v0-hard", 40, "hardcore=True, num_words=3"),
    _game("game:Crosswords-v0-random", 40, "size drawn per episode", BUG_CROSSWORDS_RANDOM),
    _game("game:WordSearch-v0-easy", 20, "num_words=5, hardcore=False", NEEDS_NLTK_WORDS),
    _game("game:WordSearch-v0-hard", 20, "num_words=5, hardcore=True", NEEDS_NLTK_WORDS),
    _game("game:WordSearch-v0-random", 20, "size drawn per episode", NEEDS_NLTK_WORDS),
    # reasoning-gym tasks
    _task("rg:composite", RG_COMPOSITE),
    _task("rg:complex_arithmetic"),
    _task("rg:intermediate_integration"),
    _task("rg:polynomial_equations"),
    _task("rg:polynomial_multiplication"),
    _task("rg:simple_equations"),
    _task("rg:simple_integration"),
    _task("rg:ab"),
    _task("rg:base_conversion"),
    _task("rg:binary_alternation"),
    _task("rg:binary_matrix"),
    _task("rg:caesar_cipher"),
    _task("rg:count_primes"),
    _task("rg:cryptarithm"),
    _task("rg:game_of_life"),
    _task("rg:game_of_life_halting"),
    _task("rg:graph_color"),
    _task("rg:group_anagrams"),
    _task("rg:isomorphic_strings"),
    _task("rg:jugs"),
    _task("rg:letter_counting"),
    _task("rg:letter_jumble"),
    _task("rg:manipulate_matrix"),
    _task("rg:number_filtering"),
    _task("rg:number_sorting"),
    _task("rg:palindrome_generation"),
    _task("rg:palindrome_partitioning"),
    _task("rg:pool_matrix"),
    _task("rg:ransom_note"),
    _task("rg:rotate_matrix"),
    _task("rg:rotten_oranges"),
    _task("rg:sentence_reordering"),
    _task("rg:spell_backward"),
    _task("rg:spiral_matrix"),
    _task("rg:string_insertion"),
    _task("rg:string_manipulation"),
    _task("rg:string_splitting"),
    _task("rg:string_synthesis"),
    _task("rg:word_ladder"),
    _task("rg:word_sequence_reversal"),
    _task("rg:word_sorting"),
    _task("rg:arc_1d"),
    _task("rg:arc_agi"),
    _task("rg:rearc"),
    _task("rg:basic_arithmetic"),
    _task("rg:bitwise_arithmetic"),
    _task("rg:calendar_arithmetic"),
    _task("rg:chain_sum"),
    _task("rg:count_bits"),
    _task("rg:decimal_arithmetic"),
    _task("rg:decimal_chain_sum"),
    _task("rg:dice"),
    _task("rg:fraction_simplification"),
    _task("rg:gcd"),
    _task("rg:gsm_symbolic"),
    _task("rg:lcm"),
    _task("rg:leg_counting"),
    _task("rg:number_format"),
    _task("rg:power_function"),
    _task("rg:prime_factorization"),
    _task("rg:products"),
    _task("rg:time_intervals"),
    _task("rg:bf"),
    _task(
        "rg:codeio",
        "reasoning-gym's codeio runs its dataset's Python with exec() in this process, "
        "unsandboxed, at every reset (here it wrote files into the working directory)",
    ),
    _task("rg:color_cube_rotation"),
    _task("rg:figlet_font"),
    _task("rg:modulo_grid"),
    _task("rg:needle_haystack"),
    _task("rg:number_sequence"),
    _task("rg:rectangle_count"),
    _task("rg:rubiks_cube"),
    _task("rg:boxnet"),
    _task("rg:countdown"),
    _task("rg:emoji_mystery"),
    _task("rg:futoshiki"),
    _task("rg:kakurasu"),
    _task("rg:knight_swap"),
    _task("rg:mahjong_puzzle"),
    _task("rg:maze"),
    _task("rg:mini_sudoku"),
    _task("rg:n_queens"),
    _task("rg:puzzle24"),
    _task("rg:rush_hour"),
    _task("rg:sokoban"),
    _task("rg:sudoku"),
    _task("rg:survo"),
    _task("rg:tower_of_hanoi"),
    _task("rg:tsumego"),
    _task("rg:advanced_geometry"),
    _task("rg:simple_geometry"),
    _task("rg:course_schedule"),
    _task("rg:family_relationships"),
    _task("rg:largest_island"),
    _task("rg:path_star"),
    _task("rg:quantum_lock"),
    _task("rg:shortest_path"),
    _task("rg:acre"),
    _task("rg:list_functions"),
    _task("rg:aiw"),
    _task("rg:circuit_logic"),
    _task("rg:knights_knaves"),
    _task("rg:propositional_logic"),
    _task("rg:self_reference"),
    _task("rg:syllogism"),
    _task("rg:zebra_puzzles"),
    _task("rg:coin_flip"),
    # Hugging Face datasets
    _dataset("math:ASDiv2K", "math problems", "axon-rl/ASDIV-2k"),
    _dataset("math:GSM8K", "math problems", "axon-rl/GSM-8k"),
    _dataset("math:Math12K", "math problems", "axon-rl/MATH-12k"),
    _dataset("math:Math8K-3to5", "math problems", "axon-rl/MATH-lvl3to5-8k"),
    _dataset("math:Orz57K", "math problems", "axon-rl/ORZ-57k"),
    _dataset("math:DeepScaleR40K", "math problems", "axon-rl/DeepScaleR-40K"),
    _dataset("math:Geometry3K", "math problems", "axon-rl/geometry3k (train)"),
    _dataset("code:CodeContest", "programming problems", "axon-rl/CodeContest (train)"),
    _dataset("code:Taco8k", "programming problems", "axon-rl/TACO-8k (train)"),
    _dataset(
        "code:PrimeIntellect15k", "programming problems", "axon-rl/PrimeIntellect-15k (train)"
    ),
    _dataset("logic:RuleTaker-d0", "logic questions", "axon-rl/RuleTaker-d0-70k (train)"),
    _dataset("logic:RuleTaker-d1", "logic questions", "axon-rl/RuleTaker-d1-70k (train)"),
    _dataset("logic:RuleTaker-d2", "logic questions", "axon-rl/RuleTaker-d2-70k (train)"),
    _dataset("logic:RuleTaker-d3", "logic questions", "axon-rl/RuleTaker-d3-70k (train)"),
    _dataset("logic:RuleTaker-d5", "logic questions", "axon-rl/RuleTaker-d5-70k (train)"),
    _dataset("qa:NaturalQuestions", "questions", "axon-rl/NaturalQuestions (train)"),
    _dataset("qa:HotpotQA", "questions", "axon-rl/HotpotQA (train)"),
    _dataset("eval:MATH500", "evaluation set", "axon-rl/math-eval (math)"),
    _dataset("eval:AMC", "evaluation set", "axon-rl/math-eval (amc)"),
    _dataset("eval:OlympiadBench", "evaluation set", "axon-rl/math-eval (olympiad_bench)"),
    _dataset("eval:Minerva", "evaluation set", "axon-rl/math-eval (minerva)"),
    _dataset("eval:AIME24", "evaluation set", "axon-rl/math-eval (aime24)"),
    _dataset("eval:CodeContest", "evaluation set", "axon-rl/CodeContest (test)"),
    _dataset("eval:QaOpen", "evaluation set", "google-research-datasets/nq_open (validation)"),
    _dataset("eval:2Wiki", "evaluation set", "axon-rl/search-eval (2wiki)"),
    _dataset("eval:PopQA", "evaluation set", "axon-rl/search-eval (popqa)"),
    _dataset("eval:TriviaQA", "evaluation set", "axon-rl/search-eval (tq)"),
    _dataset("eval:HotpotQA", "evaluation set", "axon-rl/search-eval (hotpotqa)"),
    _dataset("eval:Bamboogle", "evaluation set", "axon-rl/search-eval (bamboogle)"),
    _dataset("eval:NaturalQuestions", "evaluation set", "axon-rl/search-eval (nq)"),
    _dataset("eval:Musique", "evaluation set", "axon-rl/search-eval (musique)"),
)

BY_GEM_ID: dict[str, GemEntry] = {entry.gem_id: entry for entry in CATALOG}
BY_ENV_ID: dict[str, GemEntry] = {entry.env_id: entry for entry in CATALOG}


#: a reset (or a GEM construction) of these takes a tenth of a second to seconds (Sokoban's
#: rooms, 9x9 Sudoku with unique solutions, reasoning-gym's search-based generators)
SLOW_GEM_IDS = frozenset(
    {
        "gem/SokobanHard-v0",
        "gem/SokobanRandom-v0",
        "gem/SudokuHard-v0",
        "gem/SudokuRandom-v0",
        "gem/Futoshiki-v0",
        "gem/KnightSwap-v0",
        "gem/Puzzle24-v0",
        "gem/ZebraPuzzles-v0",
        "gem/IntermediateIntegration-v0",
        "gem/QuantumLock-v0",
        "gem/Sudoku-v0",
        "gem/ComplexArithmetic-v0",
    }
)
