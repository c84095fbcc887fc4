"""readmany: answers batch "read many files" requests from an in-memory index of a workspace.

The engine (``request.answer``) is shared by every surface: the one-shot CLI, the
JSON-RPC server and the MCP adapter. See PROTOCOL.md for the contract.
"""

__version__ = "0.1.0"
