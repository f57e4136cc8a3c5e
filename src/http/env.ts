import type { Principal } from '../auth/principal.js';

/** Per-request values set by middleware. */
export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
  };
}

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string;
    principal: Principal;
  }
}
