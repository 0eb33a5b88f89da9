// What the commands that act as an Application's identity (diff, explain --check-rights) say when
// the kubeconfig's user may not impersonate impersync's user extras: their requests then go
// without them (docs/impersonation.md §11), which the controller logs and a command says on stderr.
import { EXTRA_KEYS } from '../api/index.ts';

/** The stderr line, once per destination server. */
export function extrasRefusedWarning(server: string): string {
  return `warning: the kubeconfig's user may not impersonate impersync's user extras on ${server}: requests made as the ServiceAccount went without the Application, project and revision (grant impersonate on userextras/${EXTRA_KEYS.join(', userextras/')}: docs/install.md)\n`;
}
