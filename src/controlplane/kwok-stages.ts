// The stages kwok plays for the test control plane's simulated nodes (kwok's Stage API): a node is
// Ready as soon as it exists; a scheduled pod starts and becomes Ready; a pod that runs to
// completion (restartPolicy Never or OnFailure, as Job pods and hook pods are) ends a second later
// with the exit code its first container asks for: `exit N` in its command or args (the last one
// written), 0 otherwise, so Succeeded or Failed; a pod being deleted goes away (there is no kubelet
// to finish a graceful deletion).

const podStarts = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: impersync-pod-starts
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.spec.nodeName', operator: Exists}
    - {key: '.status.phase', operator: In, values: [Pending]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      startTime: {{ $now | Quote }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName false ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      conditions:
      {{ range list "PodScheduled" "Initialized" "ContainersReady" "Ready" }}
      - {type: {{ . }}, status: "True", lastTransitionTime: {{ $now | Quote }}}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        started: true
        restartCount: 0
        state: {running: {startedAt: {{ $now | Quote }}}}
      {{ end }}
`;

const podExits = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: impersync-pod-exits
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Running]}
    - {key: '.spec.restartPolicy', operator: In, values: [Never, OnFailure]}
  delay:
    durationMilliseconds: 1000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $first := index .spec.containers 0 }}
      {{ $words := join " " (concat (or $first.command list) (or $first.args list)) }}
      {{ $asked := regexFindAll "exit [0-9]+" $words -1 }}
      {{ $code := 0 }}
      {{ if $asked }}{{ $code = atoi (trimPrefix "exit " (last $asked)) }}{{ end }}
      phase: {{ if eq $code 0 }}Succeeded{{ else }}Failed{{ end }}
      conditions:
      {{ range list "ContainersReady" "Ready" }}
      - {type: {{ . }}, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      {{ end }}
      containerStatuses:
      {{ range $i, $c := .spec.containers }}
      - name: {{ $c.name | Quote }}
        image: {{ $c.image | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: {{ if eq $i 0 }}{{ $code }}{{ else }}0{{ end }}
            reason: {{ if and (eq $i 0) (ne $code 0) }}Error{{ else }}Completed{{ end }}
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
`;

const podDeleted = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: impersync-pod-deleted
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: Exists}
  next:
    delete: true
`;

const nodeReady = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: impersync-node-ready
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ["True"]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
      conditions:
      - {type: Ready, status: "True", reason: KubeletReady, message: simulated by kwok, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      {{ range list "MemoryPressure" "DiskPressure" "PIDPressure" "NetworkUnavailable" }}
      - {type: {{ . }}, status: "False", lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      {{ end }}
      addresses:
      - {type: InternalIP, address: {{ NodeIP | Quote }}}
      - {type: Hostname, address: {{ NodeName | Quote }}}
      allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
      capacity: {cpu: "32", memory: 256Gi, pods: "110"}
      nodeInfo: {architecture: amd64, operatingSystem: linux, kubeletVersion: kwok, kubeProxyVersion: kwok}
`;

export const kwokStagesYaml = [nodeReady, podStarts, podExits, podDeleted].map((s) => s.trim()).join('\n---\n') + '\n';
