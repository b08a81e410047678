"""``python -m trainer.cli``: the same as ``roll-agent``."""

from trainer.cli.main import main

raise SystemExit(main())
