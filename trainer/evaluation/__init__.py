"""How a policy is measured: greedy episodes on an env's held-out seeds (``held_out``), a run's
evaluation points and learning curve (``log``), and leaderboard suites (``suite``)."""
