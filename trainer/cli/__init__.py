"""``roll-agent``'s commands, one module a command; ``trainer.cli.main`` builds the parser and
runs one. The hub's own commands (``envs``, ``play``, ``check``, ``serve-env``) live beside the
hub, in ``rollenv.commands``.

Every command imports what it needs inside its handler, so ``roll-agent envs`` never imports
torch or Ray.
"""
