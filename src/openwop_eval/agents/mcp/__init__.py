"""The eval as the agent's MCP server: every tool namespace of a trial served over MCP
(Streamable HTTP on loopback), each call passed through the runner's tool boundary —
recorded, answered from fixtures, a recording or a live tool, a miss failing the trial
closed — and ``mcp:COMMAND``, the agent form that runs a command against them. The MCP SDK
is imported when a trial first needs its servers (:mod:`.hub`), not with this package."""

from .agent import TRANSPORTS, McpAgent, McpAgentError, McpOptions
from .listing import TrialTools, namespaced

__all__ = ["TRANSPORTS", "McpAgent", "McpAgentError", "McpOptions", "TrialTools", "namespaced"]
