module impersync.local/tools/jsonnet

// go-jsonnet at the version Argo CD v3.6.1's go.mod requires, and its dependencies at the versions
// Argo CD's build selects (std.parseYaml's sigs.k8s.io/yaml, std.sha3's golang.org/x/crypto).
go 1.26.0

require github.com/google/go-jsonnet v0.22.0

require (
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
