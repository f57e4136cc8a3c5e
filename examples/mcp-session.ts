/**
 * Starts the Engram MCP server exactly as a desktop MCP client would from
 * examples/mcp-desktop-config.json (its command, args and env), then runs a short session with
 * the MCP SDK's client and prints it: the tools, remember, recall, forget.
 *
 *   npm run build --workspace @engram/client
 *   ENGRAM_TOKEN=$(npm run --silent token -- --tenant demo --user alice) npx tsx examples/mcp-session.ts
 *
 * The config's placeholder path is replaced by this checkout's, and ENGRAM_URL / ENGRAM_TOKEN from
 * the environment replace the config's values.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

interface DesktopConfig {
  mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
}

const repo = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const config = JSON.parse(readFileSync(new URL('./mcp-desktop-config.json', import.meta.url), 'utf8')) as DesktopConfig;
const server = config.mcpServers.engram!;
const env: Record<string, string> = { ...server.env, PATH: process.env.PATH ?? '' };
for (const name of ['ENGRAM_URL', 'ENGRAM_TOKEN', 'ENGRAM_USER_ID']) if (process.env[name]) env[name] = process.env[name]!;

const client = new Client({ name: 'engram-example', version: '1.0.0' });
await client.connect(
  new StdioClientTransport({
    command: server.command === 'node' ? process.execPath : server.command,
    args: server.args.map((arg) => arg.replace('/absolute/path/to/engram', repo)),
    env,
  }),
);

const show = (label: string, value: unknown) => console.log(`${label}\n${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
const text = (result: unknown) => ((result as { content: Array<{ text: string }> }).content[0]?.text ?? '');

const { tools } = await client.listTools();
show('> tools/list', tools.map((t) => `${t.name}(${Object.keys(t.inputSchema.properties ?? {}).join(', ')}): ${t.description}`).join('\n'));

const args = { content: 'User is allergic to peanuts', importance: 9, category: 'health' };
show(`> tools/call remember ${JSON.stringify(args)}`, text(await client.callTool({ name: 'remember', arguments: args })));

const query = { query: 'Is the user allergic to anything?', limit: 3 };
const recalled = await client.callTool({ name: 'recall', arguments: query });
show(`> tools/call recall ${JSON.stringify(query)}`, text(recalled));
show('  structuredContent', recalled.structuredContent);

const id = (recalled.structuredContent as { memories: Array<{ id: string }> }).memories[0]?.id;
if (id) {
  show(`> tools/call forget ${JSON.stringify({ memory_id: id })}`, text(await client.callTool({ name: 'forget', arguments: { memory_id: id } })));
  const again = await client.callTool({ name: 'forget', arguments: { memory_id: id } });
  show(`> tools/call forget ${JSON.stringify({ memory_id: id })} (again)`, `isError: ${again.isError}\n${text(again)}`);
}
await client.close();
