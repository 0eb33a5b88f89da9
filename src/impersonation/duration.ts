// Durations as Go's time.ParseDuration reads them ("90s", "1m30s", "1.5h"), which is how Argo CD's
// `timeout.reconciliation` is written; a bare number is taken as seconds.

const UNIT_SECONDS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  μs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

export type DurationResult = { ok: true; seconds: number } | { ok: false; error: string };

/** Parses a Go duration or a number of seconds; negative durations are refused. */
export function parseDurationSeconds(raw: string): DurationResult {
  const text = raw.trim();
  if (/^\d+(\.\d*)?$/.test(text)) return bounded(raw, Number(text));
  if (text === '0') return { ok: true, seconds: 0 };
  const body = text.startsWith('+') ? text.slice(1) : text;
  if (body.startsWith('-')) return { ok: false, error: `negative duration '${raw}'` };
  const component = /(\d+\.?\d*|\.\d+)([a-zµμ]+)/gy;
  let seconds = 0;
  let consumed = 0;
  for (let m = component.exec(body); m !== null; m = component.exec(body)) {
    const factor = UNIT_SECONDS[m[2] as string];
    if (factor === undefined) return { ok: false, error: `unknown unit '${m[2]}' in duration '${raw}'` };
    seconds += Number(m[1]) * factor;
    consumed = component.lastIndex;
  }
  if (body === '' || consumed !== body.length)
    return { ok: false, error: `invalid duration '${raw}' (expected e.g. "180s", "3m" or a number of seconds)` };
  return bounded(raw, seconds);
}

/** Go's durations end at 2^63-1 ns (about 292 years): anything longer is an error there too. */
const MAX_SECONDS = 9_223_372_036;

function bounded(raw: string, seconds: number): DurationResult {
  if (!Number.isFinite(seconds) || seconds > MAX_SECONDS)
    return { ok: false, error: `duration '${raw}' is too large (at most ${MAX_SECONDS} seconds)` };
  return { ok: true, seconds };
}
