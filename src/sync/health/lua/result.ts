// What a health script's return value means (Argo CD's ExecuteHealthLua): a table is decoded into
// {status, message} as Go's encoding/json would; nil, an empty table, a list or a field of the
// wrong type give a health with no status; an unknown status is Unknown with Argo CD's message;
// anything else, or an error raised, is the script's failure, in Argo CD's words.
import type { HealthStatus } from '../types.ts';
import { isHealthStatusCode } from '../types.ts';
import type { LuaRunOutcome } from './vm.ts';

export const INVALID_HEALTH_STATUS = 'Lua returned an invalid health status';

function failed(error: string): HealthStatus {
  return { status: 'Unknown', message: error, error };
}

/** encoding/json: field names match case-insensitively; of several, the last in key order wins. */
function field(obj: Record<string, unknown>, name: string): unknown {
  let found: unknown;
  for (const key of Object.keys(obj).sort()) if (key.toLowerCase() === name) found = obj[key];
  return found;
}

export function healthFromLua(r: LuaRunOutcome): HealthStatus {
  if (!r.ok) return failed(r.error);
  if (r.luaType === 'nil') return { status: '' };
  if (r.luaType !== 'table') return failed(`expect table output from Lua script, not ${r.luaType}`);
  const v = r.value;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { status: '' };
  const status = field(v as Record<string, unknown>, 'status');
  const message = field(v as Record<string, unknown>, 'message');
  // A value of another type is an UnmarshalTypeError, which Argo CD takes for an empty result.
  const wrongType = (x: unknown) => x !== undefined && x !== null && typeof x !== 'string';
  if (wrongType(status) || wrongType(message)) return { status: '' };
  if (!isHealthStatusCode(status)) return { status: 'Unknown', message: INVALID_HEALTH_STATUS };
  return typeof message === 'string' && message !== '' ? { status, message } : { status };
}
