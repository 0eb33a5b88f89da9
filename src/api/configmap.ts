// The `argocd-cm` ConfigMap: only its string data is read (spec §4, §7).
import { z } from 'zod';
import { ObjectMetaSchema, parseObject } from './meta.ts';

export const ARGOCD_CM = 'argocd-cm';

export const ConfigMapSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.literal('ConfigMap').optional(),
  metadata: ObjectMetaSchema,
  // Kubernetes only stores strings here; an unquoted `true` in a file is a mistake worth naming.
  data: z.record(z.string(), z.string()).optional(),
});
export type ConfigMap = z.infer<typeof ConfigMapSchema>;

export function parseConfigMap(raw: unknown): ConfigMap {
  return parseObject('ConfigMap', ConfigMapSchema, raw);
}
