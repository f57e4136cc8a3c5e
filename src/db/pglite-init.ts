/**
 * A new embedded data directory's initdb, run as a child process by openPglite: PGlite runs initdb
 * as a WebAssembly module of its own whose memory (about 400 MB) stays in the process that ran it,
 * so the service would keep it for its whole life. Here it is returned to the system when this
 * process exits. Usage: `node pglite-init.js <pg data directory> <shared_buffers>`.
 */
import { PGlite } from '@electric-sql/pglite';

const [dataDir, sharedBuffers] = process.argv.slice(2);
if (!dataDir || !sharedBuffers) {
  process.stderr.write('usage: pglite-init <pg data directory> <shared_buffers>\n');
  process.exit(2);
}
const client = await PGlite.create({ dataDir, startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffers}`] });
await client.close();
