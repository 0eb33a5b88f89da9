// argoproj.io/v1alpha1 Application: the fields impersync reads and writes, Argo CD's names and
// meanings: its spec (spec.ts), its operation and its status (status.ts). Unknown fields are kept.
import { z } from 'zod';
import { ObjectMetaSchema, parseObject } from './meta.ts';
import {
  ApplicationDestinationSchema,
  ApplicationSourceSchema,
  OperationSchema,
  ResourceIgnoreDifferencesSchema,
  SyncPolicySchema,
} from './spec.ts';
import { ApplicationStatusSchema } from './status.ts';

// source/ and renderer/ name the source type from here.
export { ApplicationSourceSchema, type ApplicationSource } from './spec.ts';

export const ApplicationSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.literal('Application').optional(),
  metadata: ObjectMetaSchema,
  spec: z.looseObject({
    project: z.string().optional(),
    source: ApplicationSourceSchema.optional(),
    sources: z.array(ApplicationSourceSchema).optional(),
    destination: ApplicationDestinationSchema.optional(),
    syncPolicy: SyncPolicySchema.optional(),
    ignoreDifferences: z.array(ResourceIgnoreDifferencesSchema).optional(),
  }),
  operation: OperationSchema.optional(),
  // Written by the controller; one that does not fit is refused here, naming the field (the
  // controller's admission reads such a status as none and replaces it: controller/admission.ts).
  status: ApplicationStatusSchema.optional(),
});
export type Application = z.infer<typeof ApplicationSchema>;

export function parseApplication(raw: unknown): Application {
  return parseObject('Application', ApplicationSchema, raw);
}

/** Argo CD treats an empty project as "default". */
export function projectName(app: { spec: { project?: string | undefined } }): string {
  return app.spec.project && app.spec.project !== '' ? app.spec.project : 'default';
}

/** "namespace/name", the key an Application is known by. */
export function applicationKey(app: { metadata: { name: string; namespace?: string | undefined } }): string {
  return `${app.metadata.namespace ?? ''}/${app.metadata.name}`;
}
