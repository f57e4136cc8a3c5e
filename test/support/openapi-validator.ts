/**
 * Drift check between openapi.yaml and what the app actually answers. The harness runs every JSON
 * response through assertDocumentedResponse(), so a status the document does not list for that
 * route, a body that does not match the documented schema, a wrong media type or a missing
 * required header fails the test that made the request.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020Module from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';

// ajv and ajv-formats are CommonJS with `exports.default`; NodeNext types the default import as the
// module object, while at run time it may be either. Take whichever is the function.
const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as typeof addFormatsModule.default;

export const OPENAPI_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../openapi.yaml');

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** The JSON Schema id the whole document is registered under, so `#/components/...` refs resolve. */
const DOC_ID = 'https://engram.local/openapi.json';

/** OpenAPI's own words, which sit next to schemas but are not JSON Schema keywords. */
const OPENAPI_KEYWORDS = [
  'openapi',
  'info',
  'jsonSchemaDialect',
  'servers',
  'paths',
  'webhooks',
  'components',
  'security',
  'tags',
  'externalDocs',
  'example',
  'discriminator',
  'xml',
];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type OpenApiDocument = { [key: string]: any };

interface Operation {
  responses?: Record<string, ResponseObject>;
  [key: string]: unknown;
}

interface ResponseObject {
  $ref?: string;
  description?: string;
  headers?: Record<string, { $ref?: string; required?: boolean }>;
  content?: Record<string, { schema?: unknown }>;
}

let cachedDoc: OpenApiDocument | undefined;
let ajv: InstanceType<typeof Ajv2020> | undefined;
const validators = new Map<string, ValidateFunction>();

/** openapi.yaml, parsed once. Treat it as read-only. */
export function openApiDoc(): OpenApiDocument {
  cachedDoc ??= parse(readFileSync(OPENAPI_FILE, 'utf8')) as OpenApiDocument;
  return cachedDoc;
}

function getAjv(): InstanceType<typeof Ajv2020> {
  if (ajv) return ajv;
  const instance = new Ajv2020({ allErrors: true, strictTypes: false, strictTuples: false, strictRequired: false });
  addFormats(instance);
  instance.addVocabulary(OPENAPI_KEYWORDS);
  instance.addSchema({ ...structuredClone(openApiDoc()), $id: DOC_ID });
  ajv = instance;
  return instance;
}

/** JSON pointer escaping of one reference token. */
export function escapePointer(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Follows a local `#/a/b` reference within the document. */
export function resolvePointer(ref: string): unknown {
  if (!ref.startsWith('#')) throw new Error(`only local references are supported, got ${ref}`);
  let node: unknown = openApiDoc();
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const token = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (node === null || typeof node !== 'object' || !(token in node)) throw new Error(`unresolvable reference ${ref}`);
    node = (node as Record<string, unknown>)[token];
  }
  return node;
}

/** Follows `$ref`s of OpenAPI objects (responses, headers, parameters) to the object itself. */
function deref<T>(value: T | { $ref: string }, pointer: string): { value: T; pointer: string } {
  let current: unknown = value;
  let at = pointer;
  for (let hops = 0; current && typeof current === 'object' && '$ref' in current; hops++) {
    if (hops > 10) throw new Error(`reference cycle at ${pointer}`);
    at = (current as { $ref: string }).$ref;
    current = resolvePointer(at);
  }
  return { value: current as T, pointer: at };
}

/** Every documented operation, e.g. `{ method: 'GET', path: '/memories/{id}' }`. */
export function routeTemplates(): Array<{ method: string; path: string }> {
  const routes: Array<{ method: string; path: string }> = [];
  for (const [template, item] of Object.entries<Record<string, unknown>>(openApiDoc().paths ?? {})) {
    for (const method of HTTP_METHODS) if (item[method]) routes.push({ method: method.toUpperCase(), path: template });
  }
  return routes;
}

interface MatchedRoute {
  template: string;
  operation: Operation;
  pointer: string;
}

function templatePattern(template: string): RegExp {
  const source = template
    .split(/(\{[^}/]+\})/)
    .map((part) => (/^\{[^}/]+\}$/.test(part) ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * The documented operation a concrete request path (query string allowed) falls under. Literal
 * paths win over templated ones (`/memories/recall` before `/memories/{id}`), as in the router.
 */
export function matchRoute(method: string, concretePath: string): MatchedRoute | undefined {
  const pathname = new URL(concretePath, 'http://x').pathname;
  const verb = method.toLowerCase();
  const candidates = Object.entries<Record<string, unknown>>(openApiDoc().paths ?? {})
    .filter(([template, item]) => item[verb] && templatePattern(template).test(pathname))
    .sort(([a], [b]) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  const [template, item] = candidates[0] ?? [];
  if (!template || !item) return undefined;
  return { template, operation: item[verb] as Operation, pointer: `#/paths/${escapePointer(template)}/${verb}` };
}

function validatorFor(schemaPointer: string): ValidateFunction {
  let validate = validators.get(schemaPointer);
  if (!validate) {
    validate = getAjv().compile({ $ref: `${DOC_ID}${schemaPointer}` });
    validators.set(schemaPointer, validate);
  }
  return validate;
}

function formatAjvError(error: ErrorObject): string {
  const where = error.instancePath || '/';
  const extra =
    error.keyword === 'additionalProperties'
      ? ` (${String(error.params.additionalProperty)})`
      : error.keyword === 'unevaluatedProperties'
        ? ` (${String(error.params.unevaluatedProperty)})`
        : error.keyword === 'enum' || error.keyword === 'const'
          ? ` ${JSON.stringify(error.params)}`
          : '';
  return `${where} ${error.message ?? error.keyword}${extra} [schema ${error.schemaPath}]`;
}

function mediaTypeOf(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

function findMediaType(content: Record<string, unknown>, actual: string): string | undefined {
  if (actual in content) return actual;
  return Object.keys(content).find((key) => {
    const [type, subtype] = key.toLowerCase().split('/');
    const [actualType] = actual.split('/');
    return (type === '*' || type === actualType) && subtype === '*';
  });
}

export interface ResponseCheckOptions {
  /** The response's Content-Type; when given, it must be one the document lists. */
  contentType?: string | null;
  /** The response's headers; when given, every header the document marks required must be there. */
  headers?: Headers;
}

/**
 * Problems with one response, as human-readable lines; empty when it matches openapi.yaml.
 * `body` is the parsed JSON (or undefined when there was none).
 */
export function validateResponse(method: string, concretePath: string, status: number, body: unknown, options: ResponseCheckOptions = {}): string[] {
  const route = matchRoute(method, concretePath);
  if (!route) return [`${method.toUpperCase()} ${concretePath} is not a documented operation`];
  const responses = route.operation.responses ?? {};
  const key = String(status) in responses ? String(status) : `${String(status)[0]}XX` in responses ? `${String(status)[0]}XX` : undefined;
  if (!key) return [`status ${status} is not documented (documented: ${Object.keys(responses).join(', ')})`];
  const { value: response, pointer } = deref<ResponseObject>(responses[key]!, `${route.pointer}/responses/${key}`);
  const errors: string[] = [];

  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const resolved = deref(header, '').value;
    if (resolved.required && options.headers && !options.headers.has(name)) errors.push(`required header ${name} is missing`);
  }

  const content = response.content ?? {};
  const hasBody = body !== undefined && body !== '';
  if (Object.keys(content).length === 0) {
    if (hasBody) errors.push(`status ${status} is documented without a body, but one was sent`);
    return errors;
  }
  const actual = mediaTypeOf(options.contentType);
  const mediaKey = options.contentType === undefined ? (Object.keys(content).find((k) => /json/.test(k)) ?? Object.keys(content)[0]) : findMediaType(content, actual);
  if (!mediaKey) {
    errors.push(`content type ${actual || '(none)'} is not documented (documented: ${Object.keys(content).join(', ')})`);
    return errors;
  }
  if (content[mediaKey]?.schema === undefined) return errors;
  const validate = validatorFor(`${pointer}/content/${escapePointer(mediaKey)}/schema`);
  if (!validate(body as Json)) errors.push(...(validate.errors ?? []).slice(0, 20).map(formatAjvError));
  return errors;
}

/** Throws when the response does not match openapi.yaml, naming the route, the status and why. */
export function assertDocumentedResponse(method: string, concretePath: string, status: number, body: unknown, headers: Headers): void {
  const errors = validateResponse(method, concretePath, status, body, { contentType: headers.get('content-type'), headers });
  if (errors.length === 0) return;
  const template = matchRoute(method, concretePath)?.template;
  const shown = JSON.stringify(body);
  throw new Error(
    [
      `OpenAPI drift: ${method.toUpperCase()} ${concretePath}${template ? ` (documented as ${template})` : ''} answered ${status}, which openapi.yaml does not allow:`,
      ...errors.map((e) => `  - ${e}`),
      `  body: ${shown && shown.length > 600 ? `${shown.slice(0, 600)}…` : shown}`,
      '  Fix the code or openapi.yaml; pass { skipOpenApiCheck: true } only for a deliberately malformed request.',
    ].join('\n'),
  );
}

/** Problems with a request body the app accepts, against the documented request schema. */
export function validateRequestBody(method: string, concretePath: string, body: unknown): string[] {
  const route = matchRoute(method, concretePath);
  if (!route) return [`${method.toUpperCase()} ${concretePath} is not a documented operation`];
  const raw = (route.operation as { requestBody?: unknown }).requestBody;
  if (raw === undefined) return body === undefined ? [] : ['the operation documents no request body'];
  const { value: requestBody, pointer } = deref<{ content?: Record<string, { schema?: unknown }> }>(raw as never, `${route.pointer}/requestBody`);
  if (requestBody.content?.['application/json']?.schema === undefined) return ['the operation documents no application/json request body'];
  const validate = validatorFor(`${pointer}/content/application~1json/schema`);
  return validate(body as Json) ? [] : (validate.errors ?? []).map(formatAjvError);
}

/** Compiles every request and response schema in the document (used by the structural test). */
export function compileAllSchemas(): string[] {
  const compiled: string[] = [];
  for (const { method, path: template } of routeTemplates()) {
    const pointer = `#/paths/${escapePointer(template)}/${method.toLowerCase()}`;
    const operation = resolvePointer(pointer) as Operation & { requestBody?: unknown };
    if (operation.requestBody !== undefined) {
      const { value: requestBody, pointer: at } = deref<{ content?: Record<string, { schema?: unknown }> }>(operation.requestBody as never, `${pointer}/requestBody`);
      for (const [mediaType, media] of Object.entries(requestBody.content ?? {})) {
        if (media.schema === undefined) continue;
        validatorFor(`${at}/content/${escapePointer(mediaType)}/schema`);
        compiled.push(`${method} ${template} request ${mediaType}`);
      }
    }
    for (const [status, raw] of Object.entries(operation.responses ?? {})) {
      const { value: response, pointer: at } = deref<ResponseObject>(raw, `${pointer}/responses/${status}`);
      for (const [mediaType, media] of Object.entries(response.content ?? {})) {
        if (media.schema === undefined) continue;
        validatorFor(`${at}/content/${escapePointer(mediaType)}/schema`);
        compiled.push(`${method} ${template} ${status} ${mediaType}`);
      }
    }
  }
  return compiled;
}
