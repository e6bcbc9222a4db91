// An agent that gets its tools over MCP with the official TypeScript SDK's client, as a
// shipped Node agent would: `node agent.mjs CONFIG` (the servers of `{mcp_config}`).
//
// It reads the task's input on stdin: {"calls": [[server, tool, args], ...], "answer": ...},
// connects to every server of the config (Client + StreamableHTTPClientTransport), lists
// each one's tools, makes the calls in order and prints {"answer": ..., "errors": [...]}.
// A call that answers with an error (isError) is noted and the agent goes on, as a model
// would.

import { readFile } from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function main() {
  const configPath = process.argv[2];
  if (!configPath) throw new Error("usage: node agent.mjs MCP_CONFIG");
  const task = JSON.parse(await readStdin());
  const { mcpServers } = JSON.parse(await readFile(configPath, "utf8"));

  const clients = new Map();
  const listed = new Map();
  for (const [name, entry] of Object.entries(mcpServers)) {
    const client = new Client({ name: "openwop-node-agent", version: "0.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(entry.url)));
    clients.set(name, client);
    const { tools } = await client.listTools();
    listed.set(name, new Set(tools.map((tool) => tool.name)));
  }

  const errors = [];
  try {
    for (const [server, tool, args] of task.calls) {
      const client = clients.get(server);
      if (!client) {
        errors.push(`no server ${server}`);
        continue;
      }
      if (!listed.get(server).has(tool)) errors.push(`${server}.${tool} not listed`);
      const result = await client.callTool({ name: tool, arguments: args });
      if (result.isError) errors.push(result.content.map((part) => part.text ?? "").join(""));
    }
  } finally {
    await Promise.all([...clients.values()].map((client) => client.close()));
  }
  process.stdout.write(JSON.stringify({ answer: task.answer, errors }) + "\n");
}

main().catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
