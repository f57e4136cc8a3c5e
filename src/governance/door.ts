import type { JobPayload } from '../extraction/schemas.js';
import type { PiiMode } from '../settings/schemas.js';
import { DomainError } from '../shared/errors.js';
import { PII_NAMES, redactJson, redactPii, type PiiKind } from './pii.js';

/**
 * "At the door": personal data is redacted before a transcript is written to the job row (the
 * outbox), so no table, queue entry or log line ever holds it. Under `reject` the transcript is
 * redacted the same way, and the facts that came out holding a placeholder are skipped later.
 */
export function redactTranscript(payload: JobPayload, mode: PiiMode): JobPayload {
  if (mode === 'off') return payload;
  return {
    ...payload,
    messages: payload.messages.map((m) => ({
      ...m,
      content: redactPii(m.content).text,
      ...(m.name === undefined ? {} : { name: redactPii(m.name).text }),
    })),
    metadata: redactJson(payload.metadata).value,
    ...(payload.instructions === undefined ? {} : { instructions: redactPii(payload.instructions).text }),
  };
}

/** One memory as a direct add or a PATCH gives it: what the door looks at. */
export interface DoorItem {
  content?: string | undefined;
  metadata?: unknown;
}

/**
 * A direct write under the tenant's PII mode: `redact` answers the items with personal data
 * replaced; `reject` refuses the whole request (422) naming the first kind and where, never the value.
 */
export function admitItems<T extends DoorItem>(items: T[], mode: PiiMode, path: (index: number) => string): T[] {
  if (mode === 'off') return items;
  return items.map((item, index) => {
    const kinds = new Set<PiiKind>();
    const content = item.content === undefined ? undefined : redactPii(item.content);
    for (const k of content?.kinds ?? []) kinds.add(k);
    const metadata = item.metadata === undefined ? undefined : redactJson(item.metadata, kinds).value;
    if (mode === 'reject' && kinds.size > 0) {
      const kind = [...kinds][0]!;
      const where = content && content.kinds.length > 0 ? `${path(index)}/content` : `${path(index)}/metadata`;
      throw new DomainError('pii_rejected', `the memory holds ${PII_NAMES[kind]}, and this tenant's pii.mode is reject`, {
        errors: [{ path: where, message: `holds ${PII_NAMES[kind]} (${kind})` }],
      });
    }
    return {
      ...item,
      ...(content === undefined ? {} : { content: content.text }),
      ...(metadata === undefined ? {} : { metadata }),
    } as T;
  });
}
