import { ConfigError, loadConfig } from '../config.js';
import { openDatabase, prepareDatabase } from './open.js';

try {
  const config = loadConfig();
  const database = await openDatabase(config);
  try {
    await prepareDatabase(database, true);
    process.stdout.write(`migrations applied (${database.kind})\n`);
  } finally {
    await database.close();
  }
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `migration failed: ${(error as Error).message}`}\n`);
  process.exit(1);
}
