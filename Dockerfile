# syntax=docker/dockerfile:1
#
# Engram: one image, two roles.
#   API (default):  docker run -p 8080:8080 -e DATABASE_URL=… -e REDIS_URL=… -e AUTH_JWT_SECRET=… engram
#   worker:         docker run -e WORKER_METRICS_PORT=8080 -e DATABASE_URL=… -e REDIS_URL=… -e AUTH_JWT_SECRET=… engram node dist/workers/extraction.js
#   migrations:     docker run -e DATABASE_URL=… -e AUTH_JWT_SECRET=… engram node dist/src/db/migrate-cli.js
# (`npm run worker:prod` / `npm run db:migrate:prod` run the same files, but as a container's main
# process npm exits on SIGTERM without passing it on, so the worker would not stop gracefully.)
# Without DATABASE_URL the API runs on embedded PostgreSQL under DATA_DIR (/data): mount a volume
# there (`-v engram-data:/data`) or the data goes with the container.

ARG NODE_IMAGE=node:20-bookworm-slim

# 1. Dependencies, dev included (the TypeScript compiler), cached on the lockfile alone.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV SCARF_ANALYTICS=false
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts

# 2. Compile src/ and workers/ to dist/ (no tests, no TypeScript loader at run time).
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workers ./workers
RUN npm run build

# 3. Runtime: production dependencies only, compiled code, migrations and the OpenAPI document.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data \
    SCARF_ANALYTICS=false
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force \
    && mkdir -p /data && chown node:node /data
COPY --from=build /app/dist ./dist
COPY drizzle ./drizzle
COPY openapi.yaml ./openapi.yaml
USER node
EXPOSE 8080
# The worker has no API: it answers /healthz on WORKER_METRICS_PORT when that is set.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const p=process.env.WORKER_METRICS_PORT||process.env.PORT||8080;fetch('http://127.0.0.1:'+p+'/healthz',{signal:AbortSignal.timeout(3000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
