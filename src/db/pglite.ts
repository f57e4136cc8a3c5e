import type { Database } from './client.js';

export interface PgliteOptions {
  dataDir: string;
}

export async function openPglite(_options: PgliteOptions): Promise<Database> {
  throw new Error('the embedded database is not available yet: set DATABASE_URL');
}
