import { ConfigError, loadConfig } from '../config.js';
import { configuredEmbedder, createEmbedder, describeEmbedder } from '../llm/embedders.js';
import { openDatabase, prepareDatabase } from './open.js';
import { reembedDatabase } from './reembed.js';

/**
 * `npm run db:reembed`: moves every stored vector to the embedder the environment names
 * (EMBEDDINGS, EMBEDDING_DIMENSIONS, EMBEDDING_MODEL; unset: the default), with the service
 * stopped. Killed part-way, it goes on where it stopped when run again with the same settings.
 */
try {
  const config = loadConfig();
  const target = configuredEmbedder(config);
  const database = await openDatabase(config);
  if (database.claimExclusive && !(await database.claimExclusive())) {
    await database.close();
    throw new Error('an Engram service or worker is running on this database: stop every one first (vectors written meanwhile would mix two embedders)');
  }
  const embedder = await createEmbedder(config.llm, undefined, undefined, target);
  try {
    await prepareDatabase(database, config.migrateOnStart);
    let lastPrinted = 0;
    const started = performance.now();
    const outcome = await reembedDatabase(database, embedder, target, {
      onStart: (message) => process.stdout.write(`${message}\n`),
      onProgress: ({ done, total }) => {
        const now = performance.now();
        if (done < total && now - lastPrinted < 1000) return;
        lastPrinted = now;
        const rate = Math.round(done / Math.max(0.001, (now - started) / 1000));
        process.stdout.write(`  ${done}/${total} (${Math.floor((done / Math.max(1, total)) * 100)}%), ${rate} memories/s\n`);
      },
    });
    const what = describeEmbedder(target);
    process.stdout.write(
      outcome.kind === 'unchanged'
        ? `the database is already on ${what}: nothing to do\n`
        : outcome.kind === 'recorded'
          ? `the database holds no memories: it now records ${what}\n`
          : `done: every memory is on ${what} (${outcome.rows} re-embedded in this run)\n`,
    );
  } finally {
    await embedder.close?.();
    await database.close();
  }
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : `db:reembed failed: ${(error as Error).message}`}\n`);
  process.exit(1);
}
