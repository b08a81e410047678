"""The manifest of TextArena's base games: which run offline here, which cannot, and why.

Checked in so that registering the ``textarena/<Game>-v0`` ids never imports TextArena (rollenv is
imported everywhere). ``tests/environments/textarena_games`` checks it against the installed
TextArena: every base game (its ``-raw``/``-train`` copies and size variants aside) is listed
once, as runnable or with a reason, and every runnable one resets and steps offline.

A game's ``requires`` is checked when the ids are registered, cheaply (no import): a Python
version, importable modules, NLTK data files on NLTK's search path. A game whose requirements
are not met is registered unavailable with the first unmet one as its reason.

Example:
    >>> game = GAMES_BY_ID["TicTacToe-v0"]
    >>> game.players, game.rollenv_id
    (2, 'textarena/TicTacToe-v0')
    >>> unmet_requirement(GAMES_BY_ID["GuessWho-v0"])
    'needs an LLM game master through the OpenRouter API (OPENROUTER_API_KEY and network)'
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass

#: the reason of every game when TextArena itself is not installed
INSTALL_HINT = "pip install 'rollenv[textarena]'"
#: TextArena's games with a Python 3.12 f-string (nested quotes): a SyntaxError before 3.12
PY312 = "python>=3.12"


@dataclass(frozen=True)
class Game:
    """One TextArena base game.

    Attributes:
        textarena_id: TextArena's id of the base game (``"TicTacToe-v0"``).
        players: seats in the game (the agent takes one, pinned opponents the others).
        description: one line for listings.
        max_turns: the agent's turns before the episode is truncated.
        moves: templates of candidate moves, for games whose observations do not list their
            moves (``"[{0..8}]"``, ``"[{A|B} {1..3}]"``); see ``environments.textarena.moves``.
        requires: what the game needs besides TextArena: ``"python>=3.12"``,
            ``"module:<name>"``, ``"nltk:<path in nltk_data>"``, or ``"never:<reason>"``.
        numpy_random: the game draws from numpy's global random state (swapped like Python's).
        hidden_refusals: the game refuses moves for reasons hidden from the player (a mine, a
            wrong letter), so ``action_words`` may not try moves on a copy of the game (that
            would hand the random policy the hidden state).
    """

    textarena_id: str
    players: int
    description: str
    max_turns: int = 100
    moves: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    numpy_random: bool = False
    hidden_refusals: bool = False

    @property
    def rollenv_id(self) -> str:
        return f"textarena/{self.textarena_id}"


_NLTK_WORDS = "nltk:corpora/words"
_NLTK_TAGGER = "nltk:taggers/averaged_perceptron_tagger_eng"
_OPENROUTER = (
    "never:needs an LLM game master through the OpenRouter API (OPENROUTER_API_KEY and network)"
)
_JURY = "never:needs an LLM jury through the OpenRouter API (OPENROUTER_API_KEY and network)"

GAMES: tuple[Game, ...] = (
    # ------------------------------------------------------------------ one player
    Game("2048-v0", 1, "2048: slide tiles to reach 2048", 200, ("[{Up|Down|Left|Right}]",)),
    Game(
        "Bandit-v0",
        1,
        "multi-armed bandit: find the best of 5 buttons",
        25,
        ("[{red|blue|green|yellow|purple}]",),
    ),
    Game("Blackjack-v0", 1, "Blackjack against the dealer, 5 hands", 60, ("[Hit]", "[Stand]")),
    Game(
        "Countdown-v0",
        1,
        "Countdown numbers: combine numbers to reach the target",
        30,
        ("[{0..5} {0..5} {+|-|*|/}]",),
    ),
    Game(
        "Crosswords-v0",
        1,
        "fill a small crossword from clues",
        30,
        ("[{0..11} {0..11} {a..z}]",),
        hidden_refusals=True,
    ),
    Game(
        "Cryptarithm-v0",
        1,
        "SEND + MORE = MONEY: map letters to digits",
        100,
        ("[{S|E|N|D|M|O|R|Y} {0..9}]",),
    ),
    Game("FifteenPuzzle-v0", 1, "15-puzzle: slide tiles into order", 200),
    Game("FrozenLake-v0", 1, "FrozenLake: walk to the goal around holes", 100),
    Game(
        "GuessTheNumber-v0",
        1,
        "guess a number from 1 to 20 with higher/lower hints",
        10,
        ("[{1..20}]",),
    ),
    Game("LightsOut-v0", 1, "Lights Out 5x5: turn every light off", 20, ("[{0..4} {0..4}]",)),
    Game("LogicPuzzle-v0", 1, "logic grid puzzle: assign items from clues", 100, ("@grid",)),
    Game(
        "Mastermind-v0",
        1,
        "Mastermind: find a 4-digit code from peg feedback",
        20,
        ("[{1..6} {1..6} {1..6} {1..6}]",),
    ),
    Game(
        "Minesweeper-v0",
        1,
        "Minesweeper 8x8 with 10 mines",
        100,
        ("[{0..7} {0..7}]",),
        hidden_refusals=True,
    ),
    Game("PegJump-v0", 1, "peg solitaire on a triangle: leave one peg", 20, ("[{1..15} {1..15}]",)),
    Game(
        "RushHour-v0",
        1,
        "Rush Hour: slide cars to free the red car",
        100,
        ("[{A..K}{+|-}]", "[X{+|-}]"),
    ),
    Game("Secretary-v0", 1, "secretary problem: accept the highest of 5 values", 5),
    Game(
        "Set-v0",
        1,
        "Set: find sets of three cards in 20 turns",
        20,
        ("[{1..12}, {1..12}, {1..12}]",),
    ),
    Game(
        "Slitherlink-v0",
        1,
        "Slitherlink 4x4: draw one loop around the numbers",
        200,
        ("[{h|v} {0..4} {0..4}]",),
    ),
    Game(
        "Sokoban-v0",
        1,
        "Sokoban 6x6 with 3 boxes",
        30,
        ("[{up|down|left|right}]",),
        numpy_random=True,
    ),
    Game("Sudoku-v0", 1, "Sudoku with 60 clues", 100, ("[{1..9} {1..9} {1..9}]",)),
    Game("ThreeCardMonte-v0", 1, "Three-card Monte: follow the ball under the cups", 1),
    Game("TowerOfHanoi-v0", 1, "Tower of Hanoi with 3 disks", 14, ("[{A|B|C} {A|B|C}]",)),
    # ------------------------------------------------------------------ two players
    Game(
        "Alquerque-v0",
        2,
        "Alquerque: capture by jumping on a 5x5 board",
        60,
        ("@board:2",),
    ),
    Game("Battleship-v0", 2, "Battleship on a 5x5 grid", 30, ("[{A..E}{0..4}]",)),
    Game(
        "Breakthrough-v0",
        2,
        "Breakthrough 8x8: reach the far row",
        100,
        ("@board-joined:1",),
    ),
    Game("Briscola-v0", 2, "Briscola: Italian trick-taking card game", 30, ("[play {1..3}]",)),
    Game(
        "Chopsticks-v0",
        2,
        "Chopsticks: finger-counting hand game",
        40,
        ("[attack {0|1} {0|1}]", "[split {0..4} {0..4}]"),
    ),
    Game(
        "ColonelBlotto-v0",
        2,
        "Colonel Blotto: split 20 units over 3 fields, 9 rounds",
        20,
        tuple(f"[A{a} B{b} C{20 - a - b}]" for a in range(0, 21, 2) for b in range(0, 21 - a, 2)),
    ),
    Game("ConnectFour-v0", 2, "Connect Four on a 6x7 board", 30, ("[col {0..6}]",)),
    Game("Crusade-v0", 2, "Crusade: knights-only capture game", 40, ("@board:2",)),
    Game("GameOfPureStrategy-v0", 2, "Game of Pure Strategy: bid cards for prizes", 20),
    Game("GermanWhist-v0", 2, "German Whist: two-player trick-taking", 60, ("[play {1..13}]",)),
    Game(
        "Golf-v0",
        2,
        "Golf card game: lowest score wins",
        60,
        ("[draw]", "[take]", "[discard]", "[swap {1..2} {1..3}]"),
    ),
    Game("HighSociety-v0", 2, "High Society: bid money cards for prestige", 40, ("[{1..11}]",)),
    Game(
        "IndianPoker-v0",
        2,
        "Indian Poker: see only the opponent's card",
        30,
        ("[check]", "[call]", "[fold]", "[bet {1..3}]", "[raise {1..3}]"),
    ),
    Game("IteratedMatchingPennies-v0", 2, "Matching Pennies, 10 rounds", 20),
    Game(
        "IteratedPrisonersDilemma-v0",
        2,
        "Iterated Prisoner's Dilemma with chat, 10 rounds",
        40,
        ("[Cooperate]", "[Defect]"),
    ),
    Game("IteratedRockPaperScissors-v0", 2, "Rock-Paper-Scissors, 9 rounds", 20),
    Game(
        "IteratedTwoThirdsAverage-v0", 2, "guess 2/3 of the average, 10 rounds", 20, ("[{0..100}]",)
    ),
    Game("KuhnPoker-v0", 2, "Kuhn Poker (J, Q, K), 3 rounds", 20),
    Game(
        "LinesOfAction-v0",
        2,
        "Lines of Action: connect all your pieces",
        100,
        ("@board:3",),
    ),
    Game("MemoryGame-v0", 2, "Memory: flip pairs of cards", 30, ("[{0..3} {0..3} {0..3} {0..3}]",)),
    Game("Nim-v0", 2, "Nim with piles 3, 4, 5: take the last object", 20, ("[{0..2} {1..5}]",)),
    Game("Othello-v0", 2, "Othello 8x8", 40),
    Game("PigDice-v0", 2, "Pig dice to 100 points", 100),
    Game(
        "QuantumTicTacToe-v0",
        2,
        "Quantum Tic Tac Toe with entangled marks",
        25,
        ("[{0..8},{0..8}]",),
    ),
    Game(
        "SimpleBlindAuction-v0",
        2,
        "talk, then bid blind on 5 items",
        10,
        ("[Bid on Item {0..4}: {0..200}]",),
    ),
    Game(
        "SimpleNegotiation-v0",
        2,
        "trade resources to raise your inventory's value",
        10,
        ("[Accept]", "[Deny]"),
    ),
    Game("SimpleTak-v0", 2, "SimpleTak 4x4: connect two opposite edges", 20, ("[{0..15}]",)),
    Game("SpiteAndMalice-v0", 2, "Spite and Malice: empty your payoff pile", 100),
    Game("Stratego-v0", 2, "Stratego: capture the flag", 100),
    Game(
        "Tak-v0",
        2,
        "Tak 4x4: build a road",
        50,
        ("[place () {({0..3},{0..3}): [F{0|1}]}]",),
    ),
    Game("TicTacToe-v0", 2, "Tic Tac Toe", 9),
    Game(
        "TruthAndDeception-v0",
        2,
        "tell the true fact from the false one through talk",
        6,
        ("[Fact 1]", "[Fact 2]"),
    ),
    Game(
        "TwoDollar-v0",
        2,
        "negotiate how to split $2.00",
        20,
        ("[Propose] ${0..2}.00", "[Accept]", "[Reject]"),
    ),
    Game(
        "UltimateTicTacToe-v0",
        2,
        "Ultimate Tic Tac Toe: nine boards in one",
        50,
        ("[{0..8} {0..8}]",),
    ),
    Game(
        "IteratedUltimatumGame-v0",
        2,
        "Ultimatum game: offer and accept splits",
        20,
        ("[Offer: ${0..50}]", "[Accept]", "[Reject]"),
    ),
    Game("WildTicTacToe-v0", 2, "Wild Tic Tac Toe: play X or O", 9, ("[{X|O} {0..8}]",)),
    Game("Snake-v0", 2, "two-player Snake on a 5x5 grid", 40),
    Game("Surround-v0", 2, "two-player Surround (Tron) on a 5x5 grid", 40),
    Game(
        "LiarsDice-v0", 2, "Liar's Dice with 5 dice each", 50, ("[Bid: {1..10}, {1..6}]", "[Call]")
    ),
    Game(
        "Poker-v0",
        2,
        "heads-up Texas Hold'em, 10 hands",
        100,
        ("[Check]", "[Call]", "[Fold]", "[Bet {20|50|100}]", "[Raise {20|50|100}]"),
    ),
    Game(
        "NewRecruit-v0",
        2,
        "New Recruit: multi-issue job negotiation",
        20,
        ("[Accept]", "[Propose] {A|C|E}{A|C|E}{A|C|E}{A|C|E}AAAA"),
    ),
    # ------------------------------------------------------------------ three or more players
    Game("ThreePlayerTicTacToe-v0", 3, "three-player Tic Tac Toe on 5x5, four in a row", 30),
    Game("ThreePlayerGOPS-v0", 3, "three-player Game of Pure Strategy", 20),
    Game(
        "ThreePlayerIPD-v0",
        3,
        "three-player Iterated Prisoner's Dilemma",
        20,
        ("[{1|2} {cooperate|defect}]", "[0 {cooperate|defect}]"),
    ),
    Game(
        "PublicGoodsGame-v0", 3, "Public Goods game: contribute to a shared pot", 20, ("[{0..20}]",)
    ),
    Game("MarketEntryGame-v0", 4, "Market Entry game: enter or stay out", 30, ("[E]", "[S]")),
    Game("Taboo-v0", 4, "Taboo: give clues without the taboo words", 30),
    Game(
        "SettlersOfCatan-v0",
        4,
        "Settlers of Catan (settlements and cities)",
        100,
        ("[roll]", "[end turn]", "[build road]", "[build settlement]", "[build city]"),
    ),
    Game("SecretMafia-v0", 6, "Secret Mafia: social deduction with 6 players", 30, ("[{0..5}]",)),
    # ------------------------------------------------------------------ cannot run offline
    Game("GuessWho-v0", 1, "Guess Who with an LLM game master", requires=(_OPENROUTER,)),
    Game(
        "TwentyQuestions-v0", 1, "Twenty Questions with an LLM game master", requires=(_OPENROUTER,)
    ),
    Game("Debate-v0", 2, "debate judged by an LLM jury", requires=(_JURY,)),
    Game("ScenarioPlanning-v0", 2, "scenario planning judged by an LLM jury", requires=(_JURY,)),
    Game("Hangman-v0", 1, "Hangman", requires=(_NLTK_WORDS,)),
    Game("WordLadder-v0", 1, "Word Ladder", requires=(_NLTK_WORDS,)),
    Game("Wordle-v0", 1, "Wordle", requires=(_NLTK_WORDS, _NLTK_TAGGER)),
    Game("WordSearch-v0", 1, "Word Search", requires=(_NLTK_WORDS,)),
    Game("DontSayIt-v0", 2, "Don't Say It", requires=(_NLTK_WORDS, _NLTK_TAGGER)),
    Game("LetterAuction-v0", 2, "Letter Auction", requires=(_NLTK_WORDS,)),
    Game("SpellingBee-v0", 2, "Spelling Bee", requires=(_NLTK_WORDS,)),
    Game("WordChains-v0", 2, "Word Chains", requires=(_NLTK_WORDS,)),
    Game("Codenames-v0", 4, "Codenames", requires=(_NLTK_WORDS, _NLTK_TAGGER)),
    Game("Klondike-v0", 1, "Klondike solitaire", requires=(PY312,)),
    Game("Checkers-v0", 2, "Checkers", requires=(PY312,)),
    Game("Chess-v0", 2, "Chess", requires=(PY312, "module:chess")),
    Game("IteratedStagHunt-v0", 2, "Iterated Stag Hunt", requires=(PY312,)),
    Game("ReverseTicTacToe-v0", 2, "Reverse Tic Tac Toe", requires=(PY312,)),
    Game("UltimateTexasHoldem-v0", 1, "Ultimate Texas Hold'em", requires=(PY312,)),
    Game("BabyAiText-v0", 1, "BabyAI as text", requires=("module:gym",)),
    Game(
        "CharacterConclave-v0",
        3,
        "Character Conclave",
        requires=(
            "never:broken in TextArena 0.7.4: its step raises TypeError "
            "(State.add_observation() called without observation_type)",
        ),
    ),
    Game(
        "SantoriniBaseFixed-v0",
        2,
        "Santorini with fixed worker placement",
        requires=(
            "never:rollenv has no move generator for it yet, so its random opponent cannot "
            "play (moves like [N1C1C2B2] are not listed by the game)",
        ),
    ),
    Game(
        "UsedCarNegotiation-v0",
        2,
        "Used Car Negotiation",
        requires=(
            "never:broken in TextArena 0.7.4: instructions/blue_book.txt is missing "
            "from its package",
        ),
    ),
    Game(
        "UsedCar-v0-balanced",
        2,
        "Used Car",
        requires=(
            "never:broken in TextArena 0.7.4: its module textarena.envs.UsedCar does not exist",
        ),
    ),
    Game(
        "ScorableGames-v0",
        2,
        "Scorable Games negotiation",
        requires=(
            "never:broken in TextArena 0.7.4: its game configuration folder is missing "
            "from its package",
        ),
    ),
)

GAMES_BY_ID: dict[str, Game] = {game.textarena_id: game for game in GAMES}


def unmet_requirement(game: Game) -> str | None:
    """The first requirement of ``game`` not met here, as a reason for the user, or ``None``."""
    for requirement in game.requires:
        kind, _, value = requirement.partition(":")
        if kind == "never":
            return value
        if requirement == PY312 and sys.version_info < (3, 12):
            return "TextArena 0.7.4's module for it needs Python >= 3.12 (f-string syntax)"
        if kind == "module" and importlib.util.find_spec(value) is None:
            return f"needs the Python package {value!r} (pip install {value})"
        if kind == "nltk" and not _nltk_resource_installed(value):
            name = value.rsplit("/", 1)[-1]
            return f"needs the NLTK data {name!r}: python -m nltk.downloader {name}"
    return None


def _nltk_resource_installed(resource: str) -> bool:
    # imported here, so that importing this module never imports rollenv: rollenv's import
    # registers the family, whose register() reads this module (see rollenv.plugins)
    from rollenv.nltk_data import nltk_resource_installed

    return nltk_resource_installed(resource)
