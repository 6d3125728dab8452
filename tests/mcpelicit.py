"""A small stdio MCP server whose one tool asks the person for a form (an elicitation) and
writes what came back to the file its first argument names: what a real MCP server receives
when askuser answers its elicitation. The agent CLI under test starts it:
``python -m tests.mcpelicit <result file>``.

The elicitation is a resolver's ``Elicit``: the SDK sends it the way the negotiated protocol
wants (from 2026-07-28, which Claude Code 2.1.332 speaks, inside the tool call's
``InputRequiredResult``; a mid-call ``ctx.elicit`` has no back-channel there)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, Resolve
from pydantic import BaseModel, Field

server = MCPServer("billing")
RESULT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("elicited.json")


class Workspace(BaseModel):
    plan: Literal["free", "pro"] = Field(title="Plan")
    seats: int = Field(title="Seats", ge=1, le=50)


def ask_for_the_workspace() -> Elicit[Workspace]:
    return Elicit("Which plan should the new workspace get?", Workspace)


@server.tool()
async def create_workspace(answered: Annotated[ElicitationResult[Workspace], Resolve(ask_for_the_workspace)]) -> str:
    """Create a workspace, asking the person for its plan and seats."""
    content = answered.data.model_dump() if isinstance(answered, AcceptedElicitation) else None
    RESULT.write_text(json.dumps({"action": answered.action, "content": content}))
    return f"workspace: {answered.action} {json.dumps(content)}"


if __name__ == "__main__":
    server.run("stdio")
