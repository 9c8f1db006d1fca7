"""synapse-nb as an MCP server: ``synapse-nb mcp [PATH]`` (stdio), acting as the agent.

The server module imports the MCP SDK; import it only when serving:

>>> from synapse_nb.mcp.server import build_server, TOOL_NAMES   # doctest: +SKIP
"""

__all__: list[str] = []
