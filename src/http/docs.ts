import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DomainError } from '../shared/errors.js';
import type { apiDocs as apiDocsRoute } from './routes.js';
import { apiDocsAsset } from './routes.js';
import type { Router } from './routing.js';

/**
 * GET /docs: Swagger UI over /openapi.json, served entirely from this process (swagger-ui-dist's
 * files from node_modules), so the page renders with no network beyond this service. URLs are
 * relative, so the page also works behind a reverse proxy that mounts the API under a prefix.
 */

const SWAGGER_UI_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** Our own start-up script: a file rather than an inline script, so a strict CSP holds. */
const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: 'openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout'
  });
});
`;

const PAGE = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Engram API reference</title>
    <link rel="stylesheet" href="docs/assets/swagger-ui.css">
    <link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="docs/assets/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="docs/assets/swagger-ui-bundle.js"></script>
    <script src="docs/assets/init.js"></script>
  </body>
</html>
`;

interface Asset {
  contentType: string;
  load: () => string | Buffer;
}

/** The only files /docs/assets serves: an allow-list, never a path into the file system. */
const ASSETS: Record<string, Asset> = {
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', load: () => readFileSync(path.join(SWAGGER_UI_DIR, 'swagger-ui.css')) },
  'swagger-ui-bundle.js': { contentType: 'text/javascript; charset=utf-8', load: () => readFileSync(path.join(SWAGGER_UI_DIR, 'swagger-ui-bundle.js')) },
  'favicon-32x32.png': { contentType: 'image/png', load: () => readFileSync(path.join(SWAGGER_UI_DIR, 'favicon-32x32.png')) },
  'favicon-16x16.png': { contentType: 'image/png', load: () => readFileSync(path.join(SWAGGER_UI_DIR, 'favicon-16x16.png')) },
  'init.js': { contentType: 'text/javascript; charset=utf-8', load: () => INIT_SCRIPT },
};

/** Swagger UI styles inline and draws some icons as data: URIs; nothing else, and nothing remote. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const loaded = new Map<string, Uint8Array | string>();

export function registerDocsRoutes(app: Router, page: typeof apiDocsRoute): void {
  app.openapi(page, (c) => c.body(PAGE, 200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP }));
  // The page's URLs are relative to /docs; at /docs/ they would miss. A relative Location keeps a proxy's prefix.
  // Middleware rather than a route: an alias, not an operation of the document.
  app.use('/docs/', async (c, next) => (c.req.path === '/docs/' && (c.req.method === 'GET' || c.req.method === 'HEAD') ? c.redirect('../docs', 301) : next()));
  app.openapi(apiDocsAsset, (c) => {
    const name = c.req.valid('param').file;
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (!asset) throw new DomainError('not_found', 'no such documentation asset');
    let body = loaded.get(name);
    if (body === undefined) {
      const content = asset.load();
      body = typeof content === 'string' ? content : new Uint8Array(content);
      loaded.set(name, body);
    }
    return c.body(body as never, 200, {
      'content-type': asset.contentType,
      'cache-control': 'public, max-age=3600',
      'x-content-type-options': 'nosniff',
    });
  });
}
