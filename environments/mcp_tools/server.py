"""The MCP server of ``MCPToolsEnv``: files, lookup tables and a calculator, over stdio.

Run it as ``python -m environments.mcp_tools.server``; it is an ordinary MCP server (the
``mcp`` SDK's ``MCPServer``) that any MCP client can use. Its data arrive through the tool
``admin_load_world`` (a ``World`` as JSON), which the env calls at each reset and never lets
the agent call. Tool failures raise ``ToolError``: the client gets ``is_error`` and the message.
"""

from __future__ import annotations

import difflib
import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from environments.mcp_tools.calculator import calculate as evaluate

server = MCPServer("rollenv-office", log_level="ERROR")
_files: dict[str, str] = {}
_tables: dict[str, dict[str, str]] = {}


def _unknown(kind: str, name: str, known: list[str]) -> ToolError:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return ToolError(f"no {kind} {name!r}{hint}")


@server.tool()
def list_files(folder: str = "") -> str:
    """Lists the paths of the files in a folder (all files when folder is empty)."""
    prefix = folder.strip("/") + "/" if folder.strip("/") else ""
    paths = sorted(p for p in _files if p.startswith(prefix))
    if not paths:
        folders = sorted({p.split("/")[0] for p in _files if "/" in p})
        raise _unknown("folder", folder, folders)
    return "\n".join(paths)


@server.tool()
def read_file(path: str) -> str:
    """Returns the text of one file, given its path (e.g. notes/readme.txt)."""
    if path not in _files:
        raise _unknown("file", path, sorted(_files))
    return _files[path]


@server.tool()
def lookup(table: str, key: str) -> str:
    """Returns the value stored under key in a lookup table ('prices' or 'emails')."""
    if table not in _tables:
        raise _unknown("table", table, sorted(_tables))
    if key not in _tables[table]:
        raise _unknown(f"key in table {table!r}:", key, sorted(_tables[table]))
    return _tables[table][key]


@server.tool()
def calculate(expression: str) -> str:
    """Evaluates arithmetic: numbers, + - * / // % ** and brackets (e.g. 12 * 4.5 + 3)."""
    try:
        return evaluate(expression)
    except ValueError as error:
        raise ToolError(str(error)) from None


@server.tool()
def admin_load_world(world: str) -> str:
    """Replaces the files and tables with a World's JSON; returns the server's process id."""
    data = json.loads(world)
    _files.clear()
    _files.update(data["files"])
    _tables.clear()
    _tables.update(data["tables"])
    return str(os.getpid())


if __name__ == "__main__":
    server.run("stdio")
