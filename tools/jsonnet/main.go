// impersync-jsonnet evaluates one .jsonnet file of a Directory source the way Argo CD v3.6.1's
// repo-server does (reposerver/repository/repository.go: makeJsonnetVM and findManifests), with
// the same go-jsonnet, for impersync's renderer (src/source/jsonnet.ts).
//
// It reads one JSON request on stdin:
//
//	{"file": "/abs/app/main.jsonnet", "root": "/abs", "jpaths": ["/abs/app", "/abs/lib"],
//	 "extVars": [{"name": "n", "value": "v", "code": false}], "tlas": [...]}
//
// root is the repository's physical root (symlinks resolved). Every import, importstr and
// importbin, and the file itself, must resolve (symlinks followed) to a regular file under it:
// tenant content is hostile, and `import '/etc/passwd'` or `importstr '../../other/secret'` fails
// with Argo CD's words before anything is read.
//
// Exit status and output:
//
//	0: the result as Argo CD reads it, one compact JSON value a line: the elements of a top-level
//	   array (null for a null element, which Argo CD skips), or the one object.
//	10: the evaluation failed; stdout holds go-jsonnet's error, as Argo CD quotes it.
//	11: the result is not an object or an array of objects with a kind; stdout holds the
//	    unmarshalling error Argo CD reports.
//	1: the request itself is wrong (a bug of the caller); 2 is the Go runtime's own (a panic, a
//	   fatal error such as a stack overflow: stderr says which).
//
// The goroutine stack is limited to 256 MiB (Go's default is 1 GB, which a deep tailstrict
// recursion reaches, and would then be reported as the memory limit instead).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/google/go-jsonnet"
)

type variable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Code  bool   `json:"code"`
}

type request struct {
	File    string     `json:"file"`
	Root    string     `json:"root"`
	JPaths  []string   `json:"jpaths"`
	ExtVars []variable `json:"extVars"`
	TLAs    []variable `json:"tlas"`
}

const (
	exitEvaluation = 10
	exitUnmarshal  = 11
)

func main() {
	debug.SetMaxStack(256 << 20)
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	var req request
	dec := json.NewDecoder(in)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "impersync-jsonnet: bad request: %v\n", err)
		return 1
	}
	if !filepath.IsAbs(req.File) || !filepath.IsAbs(req.Root) {
		fmt.Fprintln(os.Stderr, "impersync-jsonnet: file and root must be absolute paths")
		return 1
	}
	vm := jsonnet.MakeVM()
	// std.trace would otherwise write to stderr, mixed with nothing useful to the renderer.
	vm.SetTraceOut(io.Discard)
	for _, v := range req.TLAs {
		if v.Code {
			vm.TLACode(v.Name, v.Value)
		} else {
			vm.TLAVar(v.Name, v.Value)
		}
	}
	for _, v := range req.ExtVars {
		if v.Code {
			vm.ExtCode(v.Name, v.Value)
		} else {
			vm.ExtVar(v.Name, v.Value)
		}
	}
	vm.Importer(&rootedImporter{root: filepath.Clean(req.Root), jpaths: req.JPaths, cache: map[string]jsonnet.Contents{}})

	result, err := vm.EvaluateFile(req.File)
	if err != nil {
		fmt.Fprint(out, err.Error())
		return exitEvaluation
	}
	values, err := asManifests([]byte(result))
	if err != nil {
		fmt.Fprint(out, err.Error())
		return exitUnmarshal
	}
	var line bytes.Buffer
	for _, v := range values {
		line.Reset()
		if v == nil {
			line.WriteString("null")
		} else if err := json.Compact(&line, v.raw); err != nil {
			fmt.Fprint(out, err.Error())
			return exitUnmarshal
		}
		line.WriteByte('\n')
		if _, err := out.Write(line.Bytes()); err != nil {
			return 1
		}
	}
	return 0
}

// manifest is one value of the result as Argo CD takes it: unmarshalled as a Kubernetes
// unstructured object (a JSON object whose kind is a non-empty string).
type manifest struct {
	raw []byte
}

func (m *manifest) UnmarshalJSON(b []byte) error {
	fields := map[string]interface{}{}
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if kind, _ := fields["kind"].(string); kind == "" {
		// apimachinery's missing-kind error, with the value's text as it was given.
		return fmt.Errorf("Object 'Kind' is missing in '%s'", string(b))
	}
	m.raw = append([]byte(nil), b...)
	return nil
}

// asManifests reads the result as Argo CD's findManifests does: as an array of objects if it is
// one, else as one object, and the error is then the one object's.
func asManifests(result []byte) ([]*manifest, error) {
	var many []*manifest
	if err := json.Unmarshal(result, &many); err == nil {
		return many, nil
	}
	var one manifest
	if err := json.Unmarshal(result, &one); err != nil {
		return nil, err
	}
	return []*manifest{&one}, nil
}

// rootedImporter finds an import where go-jsonnet's FileImporter would (an absolute path as it
// is; a relative one beside the importing file, then in the library paths, last one first) and
// refuses it unless it resolves, symlinks followed, to a regular file under root. Nothing is read
// before that check: reading first would let `import '/dev/zero'` exhaust memory. The file read is
// the resolved one, so no symlink can change between the check and the read.
type rootedImporter struct {
	root   string
	jpaths []string
	// go-jsonnet requires one Contents for one foundAt.
	cache map[string]jsonnet.Contents
}

func (r *rootedImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	foundAt, err := r.find(importedFrom, importedPath)
	if err != nil {
		return jsonnet.Contents{}, "", err
	}
	if c, ok := r.cache[foundAt]; ok {
		return c, foundAt, nil
	}
	resolved, err := filepath.EvalSymlinks(foundAt)
	if err != nil {
		return jsonnet.Contents{}, "", fmt.Errorf("failed to resolve jsonnet import %q: %w", importedPath, err)
	}
	if !r.inside(resolved) {
		return jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %q resolves outside repository root", importedPath)
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return jsonnet.Contents{}, "", fmt.Errorf("failed to stat jsonnet import %q: %w", importedPath, err)
	}
	if !info.Mode().IsRegular() {
		return jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %q is not a regular file", importedPath)
	}
	data, err := os.ReadFile(resolved)
	if err != nil {
		return jsonnet.Contents{}, "", err
	}
	c := jsonnet.MakeContentsRaw(data)
	r.cache[foundAt] = c
	return c, foundAt, nil
}

var errNoMatch = errors.New("no match locally or in the Jsonnet library paths")

// find is the first candidate path that exists (lstat: a dangling symlink exists, and fails the
// check after), in FileImporter's order.
func (r *rootedImporter) find(importedFrom, importedPath string) (string, error) {
	var candidates []string
	if filepath.IsAbs(importedPath) {
		candidates = []string{importedPath}
	} else {
		// Beside the importing file; code in an ext var or TLA is no file, and Argo CD's
		// repo-server would look in its own working folder, where no tenant file is.
		if dir, _ := filepath.Split(importedFrom); filepath.IsAbs(dir) {
			candidates = append(candidates, filepath.Join(dir, importedPath))
		}
		for i := len(r.jpaths) - 1; i >= 0; i-- {
			candidates = append(candidates, filepath.Join(r.jpaths[i], importedPath))
		}
	}
	for _, c := range candidates {
		_, err := os.Lstat(c)
		if err == nil {
			return c, nil
		}
		if !os.IsNotExist(err) {
			return "", err
		}
	}
	return "", fmt.Errorf("couldn't open import %q: %w", importedPath, errNoMatch)
}

// inside: resolved (absolute, symlink-free) is below root, not root itself.
func (r *rootedImporter) inside(resolved string) bool {
	return strings.HasPrefix(filepath.Clean(resolved), r.root+string(filepath.Separator))
}
