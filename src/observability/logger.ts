// JSON logs (pino). Credentials never reach a log line: tokens, passwords, key and certificate
// material, Secret data and Authorization headers are redacted wherever they appear one or two
// levels deep (pino's redaction needs explicit paths; wildcards cover one level each).
import { pino } from 'pino';
import type { Logger, DestinationStream } from 'pino';

export type { Logger };

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const SECRET_FIELDS = ['bearerToken', 'token', 'password', 'keyData', 'certData', 'caData', 'data', 'stringData'];

/** The redaction paths: each secret field at top level, one and two levels deep, and auth headers. */
export function redactPaths(): string[] {
  const paths: string[] = [];
  for (const f of SECRET_FIELDS) paths.push(f, `*.${f}`, `*.*.${f}`, `*.*.*.${f}`);
  paths.push(
    'headers.authorization',
    'headers.Authorization',
    '*.headers.authorization',
    '*.headers.Authorization',
    'authorization',
    'Authorization',
  );
  return paths;
}

export function isLogLevel(s: string): s is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(s);
}

export function createLogger(
  opts: { level?: LogLevel; name?: string } = {},
  destination?: DestinationStream,
  fd: 1 | 2 = 1,
): Logger {
  return pino(
    {
      name: opts.name ?? 'impersync',
      level: opts.level ?? 'info',
      redact: { paths: redactPaths(), censor: '[REDACTED]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination(fd),
  );
}
