// Things that run to completion or on a schedule: Pods and Jobs (gitops-engine), CronJobs (the
// states and messages of Argo CD's bundled check), Argo Workflows (gitops-engine).
import type { KubeObject } from '../../api/index.ts';
import { ANNOTATION_IGNORE_RESTART_POLICY, annotationsOf, isHook } from '../annotations.ts';
import type { HealthStatus } from './types.ts';
import { arr, h, num, rec, str } from './values.ts';

export function podHealth(o: KubeObject): HealthStatus {
  const spec = rec(o['spec']);
  const st = rec(o['status']);
  const message = str(st['message']);
  // A Pod that runs to completion (a hook, typically) is judged by its phase, unless it asks to be
  // treated as long-running; hooks may not ask.
  const ignoreRestart = annotationsOf(o)[ANNOTATION_IGNORE_RESTART_POLICY] === 'true' && !isHook(o);
  const policy = str(spec['restartPolicy']) || 'Always';
  const longRunning = policy === 'Always' || ignoreRestart;
  if (longRunning) {
    const bad = arr(st['containerStatuses'])
      .map((c) => rec(rec(c['state'])['waiting']))
      .filter((w) => {
        const r = str(w['reason']);
        return r !== '' && (r.startsWith('Err') || r.endsWith('Error') || r.endsWith('BackOff'));
      });
    if (bad.length) return h('Degraded', bad.map((w) => str(w['message'])).join(', '));
  }
  switch (str(st['phase'])) {
    case 'Pending':
      return h('Progressing', message);
    case 'Succeeded':
      return h('Healthy', message);
    case 'Failed': {
      if (message) return h('Degraded', message);
      for (const c of [...arr(st['initContainerStatuses']), ...arr(st['containerStatuses'])]) {
        const t = rec(c['state'])['terminated'];
        if (t === undefined || t === null) continue;
        const tr = rec(t);
        if (str(tr['message'])) return h('Degraded', str(tr['message']));
        if (tr['reason'] === 'OOMKilled') return h('Degraded', 'OOMKilled');
        if (num(tr['exitCode']) !== 0)
          return h('Degraded', `container "${str(c['name'])}" failed with exit code ${num(tr['exitCode'])}`);
      }
      return h('Degraded');
    }
    case 'Running': {
      if (!longRunning) return h('Progressing', message);
      const ready = arr(st['conditions']).some((c) => c['type'] === 'Ready' && c['status'] === 'True');
      if (ready) return h('Healthy', message);
      if (arr(st['containerStatuses']).some((c) => rec(c['lastState'])['terminated'] !== undefined))
        return h('Degraded', message);
      return h('Progressing', message);
    }
  }
  return h('Unknown', message);
}

export function jobHealth(o: KubeObject): HealthStatus {
  let failed = false;
  let complete = false;
  let suspended = false;
  let failMsg = '';
  let message = '';
  for (const c of arr(rec(o['status'])['conditions'])) {
    switch (c['type']) {
      case 'Failed':
        failed = true;
        complete = true;
        failMsg = str(c['message']);
        break;
      case 'Complete':
        complete = true;
        message = str(c['message']);
        break;
      case 'Suspended':
        complete = true;
        message = str(c['message']);
        if (c['status'] === 'True') suspended = true;
        break;
    }
  }
  if (!complete) return h('Progressing', message);
  if (failed) return h('Degraded', failMsg);
  if (suspended) return h('Suspended', message);
  return h('Healthy', message);
}

/**
 * A CronJob (Argo CD's bundled check): Healthy unless its last run failed. Suspended ones are
 * reported Healthy with a note, as Argo CD does (its issue 24428); a running job leaves the last
 * outcome unknown, so Healthy too.
 */
export function cronJobHealth(o: KubeObject): HealthStatus {
  if (rec(o['spec'])['suspend'] === true) return h('Healthy', 'CronJob is Suspended');
  const st = o['status'];
  if (st === undefined || st === null) return h('Progressing', 'Waiting for CronJob');
  const s = rec(st);
  const lastSchedule = s['lastScheduleTime'];
  if (lastSchedule === undefined || lastSchedule === null) return h('Healthy', 'CronJob has not been scheduled yet');
  const lastSuccess = s['lastSuccessfulTime'];
  if (lastSuccess === undefined || lastSuccess === null)
    return h('Healthy', 'The CronJob never completed successfully. It may not be healthy');
  if (arr(s['active']).length > 0)
    return h('Healthy', 'The job is running. Its last execution may not have been successful');
  // RFC 3339 timestamps of one format compare as strings, as the Lua check compares them.
  if (str(lastSuccess) < str(lastSchedule))
    return h('Degraded', 'CronJob has not completed its last execution successfully');
  return h('Healthy', 'CronJob has completed its last execution successfully');
}

/** An Argo Workflow (gitops-engine): its phase, with the workflow's own message. */
export function workflowHealth(o: KubeObject): HealthStatus {
  const st = rec(o['status']);
  const message = str(st['message']);
  switch (str(st['phase'])) {
    case '':
    case 'Pending':
    case 'Running':
      return h('Progressing', message);
    case 'Succeeded':
      return h('Healthy', message);
    case 'Failed':
    case 'Error':
      return h('Degraded', message);
    default:
      return h('Unknown', message);
  }
}
