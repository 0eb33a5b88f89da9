// Decodes a value of Argo CD's cache as Argo CD's redisCache.unmarshal does (gzip.NewReader when
// compressed, then json.NewDecoder into the Go type) and encodes it again as redisCache.marshal
// does (json.NewEncoder): a value that comes back byte for byte is what Argo CD would have written.
// The types below carry the JSON tags of Argo CD's pkg/apis/application/v1alpha1 (written from
// them; only encoding/json and compress/gzip of Go's standard library are used).
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

type ResourceRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

type InfoItem struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

type LoadBalancerIngress struct {
	IP       string `json:"ip,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

type ResourceNetworkingInfo struct {
	TargetLabels map[string]string     `json:"targetLabels,omitempty"`
	TargetRefs   []ResourceRef         `json:"targetRefs,omitempty"`
	Labels       map[string]string     `json:"labels,omitempty"`
	Ingress      []LoadBalancerIngress `json:"ingress,omitempty"`
	ExternalURLs []string              `json:"externalURLs,omitempty"`
}

type HealthStatus struct {
	Status             string     `json:"status,omitempty"`
	Message            string     `json:"message,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
}

type ResourceNode struct {
	ResourceRef     `json:",inline"`
	ParentRefs      []ResourceRef           `json:"parentRefs,omitempty"`
	Info            []InfoItem              `json:"info,omitempty"`
	NetworkingInfo  *ResourceNetworkingInfo `json:"networkingInfo,omitempty"`
	ResourceVersion string                  `json:"resourceVersion,omitempty"`
	Images          []string                `json:"images,omitempty"`
	Health          *HealthStatus           `json:"health,omitempty"`
	CreatedAt       *time.Time              `json:"createdAt,omitempty"`
}

type ApplicationTree struct {
	Nodes         []ResourceNode `json:"nodes,omitempty"`
	OrphanedNodes []ResourceNode `json:"orphanedNodes,omitempty"`
	Hosts         []any          `json:"hosts,omitempty"`
	ShardsCount   int64          `json:"shardsCount,omitempty"`
}

type ResourceDiff struct {
	Group               string `json:"group,omitempty"`
	Kind                string `json:"kind,omitempty"`
	Namespace           string `json:"namespace,omitempty"`
	Name                string `json:"name,omitempty"`
	TargetState         string `json:"targetState,omitempty"`
	LiveState           string `json:"liveState,omitempty"`
	Diff                string `json:"diff,omitempty"`
	Hook                bool   `json:"hook,omitempty"`
	NormalizedLiveState string `json:"normalizedLiveState,omitempty"`
	PredictedLiveState  string `json:"predictedLiveState,omitempty"`
	ResourceVersion     string `json:"resourceVersion,omitempty"`
	Modified            bool   `json:"modified,omitempty"`
}

type ConnectionState struct {
	Status     string     `json:"status"`
	Message    string     `json:"message"`
	ModifiedAt *time.Time `json:"attemptedAt"`
}

type ClusterCacheInfo struct {
	ResourcesCount    int64      `json:"resourcesCount,omitempty"`
	APIsCount         int64      `json:"apisCount,omitempty"`
	LastCacheSyncTime *time.Time `json:"lastCacheSyncTime,omitempty"`
}

type ClusterInfo struct {
	ConnectionState   ConnectionState  `json:"connectionState,omitempty"`
	ServerVersion     string           `json:"serverVersion,omitempty"`
	CacheInfo         ClusterCacheInfo `json:"cacheInfo,omitempty"`
	ApplicationsCount int64            `json:"applicationsCount"`
	APIVersions       []string         `json:"apiVersions,omitempty"`
}

// Each embedded state string must itself be the JSON Go writes for a map (keys sorted, compact).
func checkState(s string) error {
	if s == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return err
	}
	again, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if string(again) != s {
		return fmt.Errorf("state differs from Go's encoding:\n%s\n%s", s, again)
	}
	return nil
}

func main() {
	kind, compression := os.Args[1], os.Args[2]
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		panic(err)
	}
	var reader io.Reader = bytes.NewReader(data)
	if compression == "gzip" {
		gz, err := gzip.NewReader(reader)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gzip:", err)
			os.Exit(1)
		}
		reader = gz
	}
	var value any
	switch kind {
	case "tree":
		value = &ApplicationTree{}
	case "managed":
		value = &[]*ResourceDiff{}
	case "cluster":
		value = &ClusterInfo{}
	}
	if err := json.NewDecoder(reader).Decode(value); err != nil {
		fmt.Fprintln(os.Stderr, "decode:", err)
		os.Exit(1)
	}
	if m, ok := value.(*[]*ResourceDiff); ok {
		for _, d := range *m {
			for _, s := range []string{d.TargetState, d.LiveState, d.NormalizedLiveState, d.PredictedLiveState} {
				if err := checkState(s); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(value); err != nil {
		panic(err)
	}
}
