// Binds the LimitsPort to project/ (spec §9): Application-level limits (sourceRepos, destinations)
// and per-object limits, whose namespaced-or-not answers come from the destination's discovery,
// read through the Application's own client.
import { groupOf } from '../api/index.ts';
import { checkApplicationLimits, checkResourceLimits, describeViolation } from '../project/index.ts';
import type { LimitsPort } from './ports.ts';

export function projectLimits(): LimitsPort {
  return {
    checkApplication: (project, app, cluster) => checkApplicationLimits(project, app, cluster).map(describeViolation),
    checkObjects: async (client, project, app, cluster, objects) => {
      const scopes = new Map<string, boolean | undefined>();
      for (const o of objects) {
        const key = `${groupOf(o.apiVersion)}/${o.kind}`;
        if (scopes.has(key)) continue;
        const info = await client.resolve(o.apiVersion, o.kind);
        scopes.set(key, info.ok ? info.value.namespaced : undefined);
      }
      return checkResourceLimits({
        project,
        cluster,
        destinationNamespace: app.spec.destination?.namespace,
        objects,
        isNamespaced: (group, kind) => scopes.get(`${group}/${kind}`),
      }).map(describeViolation);
    },
  };
}
