// The one narrow request between the controller and the renderer process (ARCHITECTURE.md, the
// credential rule): a source, the revision, the facts of its Application a render needs, and the
// answer, the rendered objects or a source error. JSON over HTTP, with a bearer token:
//
//   POST /v1/render   {input, noCache?, limits?, tenant?}   200 RenderAnswer (NDJSON) | 409 {needs} | 422 {error} | 400 | 401 | 413 | 503
//   POST /v1/resolve  {input, tenant?}                       200 {revision}            | 422 {error} | ...
//   GET  /v1/budget                        200 BudgetAnswer: the memory budget, who waits, who holds it
//   GET  /healthz                          200 (no token): the process answers
//   GET  /readyz                           200 once it has its token, else 503
//
// Both sides parse what they receive with these schemas: the renderer treats a request as hostile
// input (it comes over the network), and the controller a reply as the output of hostile content.
import { z } from 'zod';
import { ApplicationSourceSchema } from '../api/application.ts';
import { RepositoryAccessSchema } from '../api/repository.ts';
import { ToolSettingsSchema } from '../api/tool-settings.ts';
import type { SourceErrorReason } from '../source/errors.ts';

export const RENDER_PATH = '/v1/render';
export const RESOLVE_PATH = '/v1/resolve';
export const BUDGET_PATH = '/v1/budget';

/** Largest request body the renderer reads (an Application's source with inline values fits in etcd's 1.5 MiB). */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/**
 * Largest rendered objects the renderer answers with (as JSON, measured in the render's thread):
 * the controller parses an answer in its own memory, about three times its size, so this bounds
 * what one render of hostile content costs the controller.
 */
export const MAX_RENDERED_BYTES = 64 * 1024 * 1024;

/** Largest answer the controller reads: the rendered objects and the answer's few other fields. */
export const MAX_ANSWER_BYTES = MAX_RENDERED_BYTES + 1024 * 1024;

export const RenderInputSchema = z.strictObject({
  source: ApplicationSourceSchema,
  appName: z.string().min(1).max(253),
  destinationNamespace: z.string().max(253).optional(),
  project: z.string().max(253).optional(),
  instanceName: z.string().max(507).optional(),
  revision: z.string().max(1024).optional(),
  kubeVersion: z.string().max(64).optional(),
  apiVersions: z.array(z.string().max(512)).max(10_000).optional(),
  sourceRepos: z.array(z.string().max(4096)).max(10_000).optional(),
  repository: RepositoryAccessSchema.optional(),
  refSources: z
    .record(
      z.string().regex(/^\$[a-zA-Z0-9_-]+$/),
      z.strictObject({
        repoURL: z.string().max(4096),
        targetRevision: z.string().max(1024).optional(),
        repository: RepositoryAccessSchema.optional(),
      }),
    )
    .optional(),
  refNames: z
    .array(z.string().regex(/^\$[a-zA-Z0-9_-]+$/))
    .max(1000)
    .optional(),
  dependencyRepositories: z
    .array(
      z.strictObject({
        url: z.string().max(4096).optional(),
        name: z.string().max(253).optional(),
        repository: RepositoryAccessSchema.optional(),
      }),
    )
    .max(1000)
    .optional(),
  revisionMaxAgeMs: z.number().int().min(0).max(86_400_000).optional(),
  tools: ToolSettingsSchema.optional(),
  submoduleRepositories: z
    .array(z.strictObject({ url: z.string().max(4096), repository: RepositoryAccessSchema.optional() }))
    .max(1000)
    .optional(),
  signature: z
    .strictObject({
      mode: z.enum(['head', 'strict', 'legacy']),
      keys: z.array(z.string().max(256)).max(1000),
      publicKeys: z.array(z.string().max(1024 * 1024)).max(1000),
    })
    .optional(),
  /** annotation manifest-generate-paths: its paths from the root, and the revision last compared. */
  generatePaths: z
    .strictObject({
      paths: z.array(z.string().max(4096)).max(1000),
      syncedRevision: z.string().max(1024),
    })
    .optional(),
  /** operation.sync.manifests, parsed by the renderer (source/local-manifests.ts). */
  localManifests: z.array(z.string().max(MAX_REQUEST_BYTES)).max(10_000).optional(),
});

/** Whose request this is, for a fair share of render slots between tenants (the AppProject's name). */
const TenantSchema = z.string().max(512).optional();

/** Which Application a request is for (the controller's key, namespace/name): named in the renderer's memory budget. */
const ApplicationKeySchema = z.string().max(507).optional();

/**
 * The Application's own limits (api/limits.ts, from argocd-cm): the renderer applies the lower of
 * each and its own, and names the argocd-cm key when the Application's is the one passed.
 */
export const RenderLimitsSchema = z.strictObject({
  renderTimeoutMs: z.number().int().positive().optional(),
  maxObjects: z.number().int().positive().optional(),
  maxRenderedBytes: z.number().int().positive().optional(),
});
export type RequestLimits = z.infer<typeof RenderLimitsSchema>;

export const RenderRequestSchema = z.strictObject({
  input: RenderInputSchema,
  /** A hard refresh: render again even when the same input at the same commit was rendered before. */
  noCache: z.boolean().optional(),
  limits: RenderLimitsSchema.optional(),
  tenant: TenantSchema,
  application: ApplicationKeySchema,
});
export type RenderRequest = z.infer<typeof RenderRequestSchema>;

export const ResolveRequestSchema = z.strictObject({
  input: RenderInputSchema,
  tenant: TenantSchema,
  application: ApplicationKeySchema,
});

/**
 * The renderer's memory budget (renderer/memory.ts): its bytes, the requests waiting for it (each
 * `Application <key>`, how many bytes and how long) and what holds it. The controller reads it to
 * say on an Application that its render waits for memory. Bounded: only requests holding a render
 * slot wait for or hold the budget.
 */
export const BudgetAnswerSchema = z.object({
  capacity: z.number().nonnegative(),
  used: z.number().nonnegative(),
  waiting: z.array(z.object({ job: z.string().max(600), bytes: z.number(), waitedMs: z.number() })).max(10_000),
  holders: z.array(z.object({ job: z.string().max(600), bytes: z.number() })).max(10_000),
});
export type BudgetAnswer = z.infer<typeof BudgetAnswerSchema>;

const REASONS = [
  'RepositoryUnreachable',
  'RevisionNotFound',
  'ToolMissing',
  'ToolFailed',
  'Timeout',
  'TooLarge',
  'InvalidSource',
  'InvalidManifest',
  'RendererUnavailable',
  'IntegrityFailed',
  'Unexpected',
] as const satisfies readonly SourceErrorReason[];

/** Every reason is listed: a new one that is not fails to compile here. */
const allReasons: Record<Exclude<SourceErrorReason, (typeof REASONS)[number]>, never> = {};
void allReasons;

export const ErrorAnswerSchema = z.object({
  error: z.object({ reason: z.enum(REASONS), message: z.string() }),
});
export type ErrorAnswer = z.infer<typeof ErrorAnswerSchema>;

const KubeObjectSchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
});

/**
 * The revision an answer names: a commit, a chart version or an OCI digest, so short. Bounded
 * because it goes on into every request's Impersonate-Extra header (docs/impersonation.md §11): a
 * renderer taken over cannot make an Application's requests fail by their size.
 */
const AnsweredRevision = z.string().max(1024);

/**
 * A render's answer is NDJSON (`application/x-ndjson`): this header line, then one line per object
 * (RenderedObjectSchema), `objects` of them. Read line by line, no object costs the controller more
 * than its own parse, and the controller can stop reading at its limit.
 */
export const ANSWER_CONTENT_TYPE = 'application/x-ndjson';

export const RenderAnswerHeaderSchema = z.object({
  revision: AnsweredRevision,
  sourceType: z.enum(['Directory', 'Kustomize', 'Helm', 'Plugin']),
  /** The repositories a chart's dependencies were fetched from (the controller refreshes on their Secrets' changes). */
  dependencies: z.array(z.string()).optional(),
  objects: z.number().int().nonnegative(),
});
export type RenderAnswerHeader = z.infer<typeof RenderAnswerHeaderSchema>;

export const RenderedObjectSchema = z.object({
  object: KubeObjectSchema,
  location: z.object({ file: z.string(), document: z.number() }),
});

/** 409: the chart's dependencies are in these repositories; ask again with dependencyRepositories. */
export const NeedsAnswerSchema = z.object({
  needs: z
    .array(
      z.object({
        url: z.string().max(4096).optional(),
        name: z.string().max(253).optional(),
        submodule: z.boolean().optional(),
      }),
    )
    .max(1000),
});
export type NeedsAnswer = z.infer<typeof NeedsAnswerSchema>;

export const ResolveAnswerSchema = z.object({ revision: AnsweredRevision });
