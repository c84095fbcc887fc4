"""readmany: answers batch "read many files" requests from an in-memory index of a workspace.

The engine (``engine.answer.answer``) is shared by every surface: the one-shot CLI, the
JSON-RPC server and the MCP adapter. docs/protocol.md is the contract and
docs/architecture.md the map of this package.
"""

__version__ = "0.1.0"
