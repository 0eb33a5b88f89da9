// Reading untyped live objects safely: every check sees `{}`, `[]`, 0 or '' where a field is
// missing or of the wrong type, so a malformed object (or one without metadata) never throws.
import type { HealthStatus, HealthStatusCode } from './types.ts';

export type Obj = Record<string, unknown>;

export const rec = (v: unknown): Obj => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
export const arr = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(rec) : []);
export const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');
export const meta = (o: unknown): Obj => rec(rec(o)['metadata']);
export const h = (status: HealthStatusCode, message?: string): HealthStatus =>
  message ? { status, message } : { status };
