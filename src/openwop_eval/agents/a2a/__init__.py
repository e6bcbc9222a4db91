"""``a2a:URL``: a deployed agent evaluated over A2A 1.0 (the official ``a2a-sdk``, the
``a2a`` extra, imported when a trial first talks to the agent, not with this package)."""

from .agent import A2AAgent, A2AAgentError, A2AUnreachableError, has_tool_path, tool_path_warning
from .headers import HEADERS_ENV, TOKEN_ENV, CredentialVariables
from .wire import TOOLS_EXTENSION

__all__ = [
    "HEADERS_ENV",
    "TOKEN_ENV",
    "TOOLS_EXTENSION",
    "A2AAgent",
    "A2AAgentError",
    "A2AUnreachableError",
    "CredentialVariables",
    "has_tool_path",
    "tool_path_warning",
]
