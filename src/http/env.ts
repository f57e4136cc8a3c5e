import type { Principal } from '../auth/principal.js';

/** Per-request values set by middleware. */
export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
    /** Set by a handler that dispatches to a sub-application, so logs and metrics name one route. */
    routeTemplate: string;
  };
}

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string;
    principal: Principal;
    routeTemplate: string;
  }
}
