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
* four reasoning-gym tasks run but their reward is gameable (``GAMEABLE_TASKS``): not offered.

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


def env_id_for(gem_id: str) -> str:
    """rollenv's id for a GEM id (see the module docstring for the rule)."""
    prefix, _, name = gem_id.partition(":")
    if prefix == "game":
        match = re.fullmatch(r"(\w+)-v(\d+)-([\w-]+)", name)
        if match is None:
            raise ValueError(f"not a GEM game id: {gem_id!r} (expected game:<Game>-v<N>-<level>)")
        game, version, level = match.groups()
        return f"gem/{game}{_camel(level)}-v{version}"
    if prefix == "rg":
        return f"gem/{_camel(name)}-v0"
    return f"gem/{_camel(prefix)}{_camel(name)}-v0"


SLOW_SOKOBAN = (
    "too slow to serve: GEM's reverse-play search for 8x8 rooms with 4 boxes held one reset for "
    "minutes here (rollenv's own Sokoban8x8-v0 and LargerSokoban-v0 play the same game)"
)


def _game(
    gem_id: str, env_id: str, game: str, max_turns: int, description: str, unavailable: str = ""
) -> GemEntry:
    return GemEntry(gem_id, env_id, "game", game, description, max_turns, unavailable)


def _task(gem_id: str, env_id: str, unavailable: str = "") -> GemEntry:
    name = gem_id.partition(":")[2]
    description = f"reasoning-gym's {name} through GEM, one answer"
    unavailable = unavailable or GAMEABLE_TASKS.get(name, "")
    return GemEntry(gem_id, env_id, "task", name, description, 1, unavailable)


def _dataset(gem_id: str, env_id: str, what: str, source: str) -> GemEntry:
    reason = f"needs the Hugging Face dataset {source}, a download"
    description = f"GEM {what} from {source}"
    return GemEntry(gem_id, env_id, "dataset", gem_id.partition(":")[2], description, 1, reason)


CATALOG: tuple[GemEntry, ...] = (
    # games
    _game(
        "game:GuessTheNumber-v0-hard",
        "gem/GuessTheNumberHard-v0",
        "GuessTheNumber",
        7,
        "GEM GuessTheNumber, hard (min_number=1, max_number=50)",
    ),
    _game(
        "game:GuessTheNumber-v0-easy",
        "gem/GuessTheNumberEasy-v0",
        "GuessTheNumber",
        4,
        "GEM GuessTheNumber, easy (min_number=1, max_number=10)",
    ),
    _game(
        "game:GuessTheNumber-v0-random",
        "gem/GuessTheNumberRandom-v0",
        "GuessTheNumber",
        9,
        "GEM GuessTheNumber, random (size drawn per episode)",
    ),
    _game(
        "game:Mastermind-v0-hard",
        "gem/MastermindHard-v0",
        "Mastermind",
        30,
        "GEM Mastermind, hard (code_length=4, num_numbers=8, duplicate_numbers=False)",
    ),
    _game(
        "game:Mastermind-v0-random",
        "gem/MastermindRandom-v0",
        "Mastermind",
        30,
        "GEM Mastermind, random (duplicate_numbers=False)",
    ),
    _game(
        "game:Mastermind-v0-easy",
        "gem/MastermindEasy-v0",
        "Mastermind",
        10,
        "GEM Mastermind, easy (code_length=2, num_numbers=6, duplicate_numbers=False)",
    ),
    _game(
        "game:Minesweeper-v0-easy",
        "gem/MinesweeperEasy-v0",
        "Minesweeper",
        25,
        "GEM Minesweeper, easy (rows=5, cols=5, num_mines=5)",
    ),
    _game(
        "game:Minesweeper-v0-hard",
        "gem/MinesweeperHard-v0",
        "Minesweeper",
        64,
        "GEM Minesweeper, hard (rows=8, cols=8, num_mines=12)",
    ),
    _game(
        "game:Minesweeper-v0-random",
        "gem/MinesweeperRandom-v0",
        "Minesweeper",
        64,
        "GEM Minesweeper, random (size drawn per episode)",
    ),
    _game(
        "game:Wordle-v0-hard",
        "gem/WordleHard-v0",
        "Wordle",
        25,
        "GEM Wordle, hard (word_length=5, only_real_words=True)",
        NEEDS_NLTK_WORDS,
    ),
    _game(
        "game:Wordle-v0-easy",
        "gem/WordleEasy-v0",
        "Wordle",
        15,
        "GEM Wordle, easy (word_length=3, only_real_words=True)",
        NEEDS_NLTK_WORDS,
    ),
    _game(
        "game:Wordle-v0-random",
        "gem/WordleRandom-v0",
        "Wordle",
        25,
        "GEM Wordle, random (only_real_words=True)",
        NEEDS_NLTK_WORDS,
    ),
    _game(
        "game:FifteenPuzzle-v0-random",
        "gem/FifteenPuzzleRandom-v0",
        "FifteenPuzzle",
        50,
        "GEM FifteenPuzzle, random (size drawn per episode)",
        BUG_FIFTEEN_RANDOM,
    ),
    _game(
        "game:FifteenPuzzle-v0-easy",
        "gem/FifteenPuzzleEasy-v0",
        "FifteenPuzzle",
        10,
        "GEM FifteenPuzzle, easy (num_rows=2)",
    ),
    _game(
        "game:FifteenPuzzle-v0-hard",
        "gem/FifteenPuzzleHard-v0",
        "FifteenPuzzle",
        50,
        "GEM FifteenPuzzle, hard (num_rows=4)",
    ),
    _game(
        "game:Hangman-v0-random",
        "gem/HangmanRandom-v0",
        "Hangman",
        20,
        "GEM Hangman, random (hardcore=False)",
        NEEDS_NLTK_WORDS,
    ),
    _game(
        "game:Hangman-v0-easy",
        "gem/HangmanEasy-v0",
        "Hangman",
        10,
        "GEM Hangman, easy (word_length=3, hardcore=False)",
        NEEDS_NLTK_WORDS,
    ),
    _game(
        "game:Hangman-v0-hard",
        "gem/HangmanHard-v0",
        "Hangman",
        20,
        "GEM Hangman, hard (word_length=7, hardcore=False)",
        NEEDS_NLTK_WORDS,
    ),
    _game(
        "game:Sudoku-v0-easy",
        "gem/SudokuEasy-v0",
        "Sudoku",
        15,
        "GEM Sudoku, easy (clues=10, scale=4)",
    ),
    _game(
        "game:Sudoku-v0-hard",
        "gem/SudokuHard-v0",
        "Sudoku",
        50,
        "GEM Sudoku, hard (clues=50, scale=9)",
    ),
    _game(
        "game:Sudoku-v0-random",
        "gem/SudokuRandom-v0",
        "Sudoku",
        50,
        "GEM Sudoku, random (size drawn per episode)",
    ),
    _game(
        "game:TowerofHanoi-v0-easy",
        "gem/TowerofHanoiEasy-v0",
        "TowerofHanoi",
        10,
        "GEM TowerofHanoi, easy (num_disks=3)",
    ),
    _game(
        "game:TowerofHanoi-v0-hard",
        "gem/TowerofHanoiHard-v0",
        "TowerofHanoi",
        35,
        "GEM TowerofHanoi, hard (num_disks=5)",
    ),
    _game(
        "game:TowerofHanoi-v0-random",
        "gem/TowerofHanoiRandom-v0",
        "TowerofHanoi",
        35,
        "GEM TowerofHanoi, random (size drawn per episode)",
    ),
    _game(
        "game:Game2048-v0-easy",
        "gem/Game2048Easy-v0",
        "Game2048",
        50,
        "GEM Game2048, easy (target_tile=64)",
    ),
    _game(
        "game:Game2048-v0-hard",
        "gem/Game2048Hard-v0",
        "Game2048",
        50,
        "GEM Game2048, hard (target_tile=512)",
    ),
    _game(
        "game:Game2048-v0-extreme-hard",
        "gem/Game2048ExtremeHard-v0",
        "Game2048",
        100,
        "GEM Game2048, extreme hard (target_tile=2048)",
    ),
    _game(
        "game:Game2048-v0-random",
        "gem/Game2048Random-v0",
        "Game2048",
        50,
        "GEM Game2048, random (size drawn per episode)",
    ),
    _game(
        "game:Sokoban-v0-easy",
        "gem/SokobanEasy-v0",
        "Sokoban",
        20,
        "GEM Sokoban, easy (dim_room=(6, 6), num_boxes=2)",
    ),
    _game(
        "game:Sokoban-v0-hard",
        "gem/SokobanHard-v0",
        "Sokoban",
        50,
        "GEM Sokoban, hard (dim_room=(8, 8), num_boxes=4)",
        SLOW_SOKOBAN,
    ),
    _game(
        "game:Sokoban-v0-random",
        "gem/SokobanRandom-v0",
        "Sokoban",
        50,
        "GEM Sokoban, random (size drawn per episode)",
        SLOW_SOKOBAN,
    ),
    _game(
        "game:Crosswords-v0-easy",
        "gem/CrosswordsEasy-v0",
        "Crosswords",
        30,
        "GEM Crosswords, easy (hardcore=False, num_words=3)",
    ),
    _game(
        "game:Crosswords-v0-hard",
        "gem/CrosswordsHard-v0",
        "Crosswords",
        40,
        "GEM Crosswords, hard (hardcore=True, num_words=3)",
    ),
    _game(
        "game:Crosswords-v0-random",
        "gem/CrosswordsRandom-v0",
        "Crosswords",
        40,
        "GEM Crosswords, random (size drawn per episode)",
        BUG_CROSSWORDS_RANDOM,
    ),
    _game(
        "game:WordSearch-v0-easy",
        "gem/WordSearchEasy-v0",
        "WordSearch",
        20,
        "GEM WordSearch, easy (num_words=5, hardcore=False)",
        NEEDS_NLTK_WORDS,
    ),
    _game(
        "game:WordSearch-v0-hard",
        "gem/WordSearchHard-v0",
        "WordSearch",
        20,
        "GEM WordSearch, hard (num_words=5, hardcore=True)",
        NEEDS_NLTK_WORDS,
    ),
    _game(
        "game:WordSearch-v0-random",
        "gem/WordSearchRandom-v0",
        "WordSearch",
        20,
        "GEM WordSearch, random (size drawn per episode)",
        NEEDS_NLTK_WORDS,
    ),
    # reasoning-gym tasks
    _task("rg:composite", "gem/Composite-v0", RG_COMPOSITE),
    _task("rg:complex_arithmetic", "gem/ComplexArithmetic-v0"),
    _task("rg:intermediate_integration", "gem/IntermediateIntegration-v0"),
    _task("rg:polynomial_equations", "gem/PolynomialEquations-v0"),
    _task("rg:polynomial_multiplication", "gem/PolynomialMultiplication-v0"),
    _task("rg:simple_equations", "gem/SimpleEquations-v0"),
    _task("rg:simple_integration", "gem/SimpleIntegration-v0"),
    _task("rg:ab", "gem/Ab-v0"),
    _task("rg:base_conversion", "gem/BaseConversion-v0"),
    _task("rg:binary_alternation", "gem/BinaryAlternation-v0"),
    _task("rg:binary_matrix", "gem/BinaryMatrix-v0"),
    _task("rg:caesar_cipher", "gem/CaesarCipher-v0"),
    _task("rg:count_primes", "gem/CountPrimes-v0"),
    _task("rg:cryptarithm", "gem/Cryptarithm-v0"),
    _task("rg:game_of_life", "gem/GameOfLife-v0"),
    _task("rg:game_of_life_halting", "gem/GameOfLifeHalting-v0"),
    _task("rg:graph_color", "gem/GraphColor-v0"),
    _task("rg:group_anagrams", "gem/GroupAnagrams-v0"),
    _task("rg:isomorphic_strings", "gem/IsomorphicStrings-v0"),
    _task("rg:jugs", "gem/Jugs-v0"),
    _task("rg:letter_counting", "gem/LetterCounting-v0"),
    _task("rg:letter_jumble", "gem/LetterJumble-v0"),
    _task("rg:manipulate_matrix", "gem/ManipulateMatrix-v0"),
    _task("rg:number_filtering", "gem/NumberFiltering-v0"),
    _task("rg:number_sorting", "gem/NumberSorting-v0"),
    _task("rg:palindrome_generation", "gem/PalindromeGeneration-v0"),
    _task("rg:palindrome_partitioning", "gem/PalindromePartitioning-v0"),
    _task("rg:pool_matrix", "gem/PoolMatrix-v0"),
    _task("rg:ransom_note", "gem/RansomNote-v0"),
    _task("rg:rotate_matrix", "gem/RotateMatrix-v0"),
    _task("rg:rotten_oranges", "gem/RottenOranges-v0"),
    _task("rg:sentence_reordering", "gem/SentenceReordering-v0"),
    _task("rg:spell_backward", "gem/SpellBackward-v0"),
    _task("rg:spiral_matrix", "gem/SpiralMatrix-v0"),
    _task("rg:string_insertion", "gem/StringInsertion-v0"),
    _task("rg:string_manipulation", "gem/StringManipulation-v0"),
    _task("rg:string_splitting", "gem/StringSplitting-v0"),
    _task("rg:string_synthesis", "gem/StringSynthesis-v0"),
    _task("rg:word_ladder", "gem/WordLadder-v0"),
    _task("rg:word_sequence_reversal", "gem/WordSequenceReversal-v0"),
    _task("rg:word_sorting", "gem/WordSorting-v0"),
    _task("rg:arc_1d", "gem/Arc1d-v0"),
    _task("rg:arc_agi", "gem/ArcAgi-v0"),
    _task("rg:rearc", "gem/Rearc-v0"),
    _task("rg:basic_arithmetic", "gem/BasicArithmetic-v0"),
    _task("rg:bitwise_arithmetic", "gem/BitwiseArithmetic-v0"),
    _task("rg:calendar_arithmetic", "gem/CalendarArithmetic-v0"),
    _task("rg:chain_sum", "gem/ChainSum-v0"),
    _task("rg:count_bits", "gem/CountBits-v0"),
    _task("rg:decimal_arithmetic", "gem/DecimalArithmetic-v0"),
    _task("rg:decimal_chain_sum", "gem/DecimalChainSum-v0"),
    _task("rg:dice", "gem/Dice-v0"),
    _task("rg:fraction_simplification", "gem/FractionSimplification-v0"),
    _task("rg:gcd", "gem/Gcd-v0"),
    _task("rg:gsm_symbolic", "gem/GsmSymbolic-v0"),
    _task("rg:lcm", "gem/Lcm-v0"),
    _task("rg:leg_counting", "gem/LegCounting-v0"),
    _task("rg:number_format", "gem/NumberFormat-v0"),
    _task("rg:power_function", "gem/PowerFunction-v0"),
    _task("rg:prime_factorization", "gem/PrimeFactorization-v0"),
    _task("rg:products", "gem/Products-v0"),
    _task("rg:time_intervals", "gem/TimeIntervals-v0"),
    _task("rg:bf", "gem/Bf-v0"),
    _task(
        "rg:codeio",
        "gem/Codeio-v0",
        "reasoning-gym's codeio runs its dataset's Python with exec() in this process, "
        "unsandboxed, at every reset (here it wrote files into the working directory)",
    ),
    _task("rg:color_cube_rotation", "gem/ColorCubeRotation-v0"),
    _task("rg:figlet_font", "gem/FigletFont-v0"),
    _task("rg:modulo_grid", "gem/ModuloGrid-v0"),
    _task("rg:needle_haystack", "gem/NeedleHaystack-v0"),
    _task("rg:number_sequence", "gem/NumberSequence-v0"),
    _task("rg:rectangle_count", "gem/RectangleCount-v0"),
    _task("rg:rubiks_cube", "gem/RubiksCube-v0"),
    _task("rg:boxnet", "gem/Boxnet-v0"),
    _task("rg:countdown", "gem/Countdown-v0"),
    _task("rg:emoji_mystery", "gem/EmojiMystery-v0"),
    _task("rg:futoshiki", "gem/Futoshiki-v0"),
    _task("rg:kakurasu", "gem/Kakurasu-v0"),
    _task("rg:knight_swap", "gem/KnightSwap-v0"),
    _task("rg:mahjong_puzzle", "gem/MahjongPuzzle-v0"),
    _task("rg:maze", "gem/Maze-v0"),
    _task("rg:mini_sudoku", "gem/MiniSudoku-v0"),
    _task("rg:n_queens", "gem/NQueens-v0"),
    _task("rg:puzzle24", "gem/Puzzle24-v0"),
    _task("rg:rush_hour", "gem/RushHour-v0"),
    _task("rg:sokoban", "gem/Sokoban-v0"),
    _task("rg:sudoku", "gem/Sudoku-v0"),
    _task("rg:survo", "gem/Survo-v0"),
    _task("rg:tower_of_hanoi", "gem/TowerOfHanoi-v0"),
    _task("rg:tsumego", "gem/Tsumego-v0"),
    _task("rg:advanced_geometry", "gem/AdvancedGeometry-v0"),
    _task("rg:simple_geometry", "gem/SimpleGeometry-v0"),
    _task("rg:course_schedule", "gem/CourseSchedule-v0"),
    _task("rg:family_relationships", "gem/FamilyRelationships-v0"),
    _task("rg:largest_island", "gem/LargestIsland-v0"),
    _task("rg:path_star", "gem/PathStar-v0"),
    _task("rg:quantum_lock", "gem/QuantumLock-v0"),
    _task("rg:shortest_path", "gem/ShortestPath-v0"),
    _task("rg:acre", "gem/Acre-v0"),
    _task("rg:list_functions", "gem/ListFunctions-v0"),
    _task("rg:aiw", "gem/Aiw-v0"),
    _task("rg:circuit_logic", "gem/CircuitLogic-v0"),
    _task("rg:knights_knaves", "gem/KnightsKnaves-v0"),
    _task("rg:propositional_logic", "gem/PropositionalLogic-v0"),
    _task("rg:self_reference", "gem/SelfReference-v0"),
    _task("rg:syllogism", "gem/Syllogism-v0"),
    _task("rg:zebra_puzzles", "gem/ZebraPuzzles-v0"),
    _task("rg:coin_flip", "gem/CoinFlip-v0"),
    # Hugging Face datasets
    _dataset("math:ASDiv2K", "gem/MathASDiv2K-v0", "math problems", "axon-rl/ASDIV-2k"),
    _dataset("math:GSM8K", "gem/MathGSM8K-v0", "math problems", "axon-rl/GSM-8k"),
    _dataset("math:Math12K", "gem/MathMath12K-v0", "math problems", "axon-rl/MATH-12k"),
    _dataset(
        "math:Math8K-3to5", "gem/MathMath8K3to5-v0", "math problems", "axon-rl/MATH-lvl3to5-8k"
    ),
    _dataset("math:Orz57K", "gem/MathOrz57K-v0", "math problems", "axon-rl/ORZ-57k"),
    _dataset(
        "math:DeepScaleR40K", "gem/MathDeepScaleR40K-v0", "math problems", "axon-rl/DeepScaleR-40K"
    ),
    _dataset(
        "math:Geometry3K", "gem/MathGeometry3K-v0", "math problems", "axon-rl/geometry3k (train)"
    ),
    _dataset(
        "code:CodeContest",
        "gem/CodeCodeContest-v0",
        "programming problems",
        "axon-rl/CodeContest (train)",
    ),
    _dataset("code:Taco8k", "gem/CodeTaco8k-v0", "programming problems", "axon-rl/TACO-8k (train)"),
    _dataset(
        "code:PrimeIntellect15k",
        "gem/CodePrimeIntellect15k-v0",
        "programming problems",
        "axon-rl/PrimeIntellect-15k (train)",
    ),
    _dataset(
        "logic:RuleTaker-d0",
        "gem/LogicRuleTakerD0-v0",
        "logic questions",
        "axon-rl/RuleTaker-d0-70k (train)",
    ),
    _dataset(
        "logic:RuleTaker-d1",
        "gem/LogicRuleTakerD1-v0",
        "logic questions",
        "axon-rl/RuleTaker-d1-70k (train)",
    ),
    _dataset(
        "logic:RuleTaker-d2",
        "gem/LogicRuleTakerD2-v0",
        "logic questions",
        "axon-rl/RuleTaker-d2-70k (train)",
    ),
    _dataset(
        "logic:RuleTaker-d3",
        "gem/LogicRuleTakerD3-v0",
        "logic questions",
        "axon-rl/RuleTaker-d3-70k (train)",
    ),
    _dataset(
        "logic:RuleTaker-d5",
        "gem/LogicRuleTakerD5-v0",
        "logic questions",
        "axon-rl/RuleTaker-d5-70k (train)",
    ),
    _dataset(
        "qa:NaturalQuestions",
        "gem/QaNaturalQuestions-v0",
        "questions",
        "axon-rl/NaturalQuestions (train)",
    ),
    _dataset("qa:HotpotQA", "gem/QaHotpotQA-v0", "questions", "axon-rl/HotpotQA (train)"),
    _dataset("eval:MATH500", "gem/EvalMATH500-v0", "evaluation set", "axon-rl/math-eval (math)"),
    _dataset("eval:AMC", "gem/EvalAMC-v0", "evaluation set", "axon-rl/math-eval (amc)"),
    _dataset(
        "eval:OlympiadBench",
        "gem/EvalOlympiadBench-v0",
        "evaluation set",
        "axon-rl/math-eval (olympiad_bench)",
    ),
    _dataset("eval:Minerva", "gem/EvalMinerva-v0", "evaluation set", "axon-rl/math-eval (minerva)"),
    _dataset("eval:AIME24", "gem/EvalAIME24-v0", "evaluation set", "axon-rl/math-eval (aime24)"),
    _dataset(
        "eval:CodeContest", "gem/EvalCodeContest-v0", "evaluation set", "axon-rl/CodeContest (test)"
    ),
    _dataset(
        "eval:QaOpen",
        "gem/EvalQaOpen-v0",
        "evaluation set",
        "google-research-datasets/nq_open (validation)",
    ),
    _dataset("eval:2Wiki", "gem/Eval2Wiki-v0", "evaluation set", "axon-rl/search-eval (2wiki)"),
    _dataset("eval:PopQA", "gem/EvalPopQA-v0", "evaluation set", "axon-rl/search-eval (popqa)"),
    _dataset("eval:TriviaQA", "gem/EvalTriviaQA-v0", "evaluation set", "axon-rl/search-eval (tq)"),
    _dataset(
        "eval:HotpotQA", "gem/EvalHotpotQA-v0", "evaluation set", "axon-rl/search-eval (hotpotqa)"
    ),
    _dataset(
        "eval:Bamboogle",
        "gem/EvalBamboogle-v0",
        "evaluation set",
        "axon-rl/search-eval (bamboogle)",
    ),
    _dataset(
        "eval:NaturalQuestions",
        "gem/EvalNaturalQuestions-v0",
        "evaluation set",
        "axon-rl/search-eval (nq)",
    ),
    _dataset(
        "eval:Musique", "gem/EvalMusique-v0", "evaluation set", "axon-rl/search-eval (musique)"
    ),
)

BY_GEM_ID: dict[str, GemEntry] = {entry.gem_id: entry for entry in CATALOG}
BY_ENV_ID: dict[str, GemEntry] = {entry.env_id: entry for entry in CATALOG}


#: a reset (or a GEM construction) of these takes from 0.1 s to 10 s (measured here: Sokoban's
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
