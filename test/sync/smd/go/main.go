// Reference answers from the real structured-merge-diff and kube-openapi's schemaconv, for the
// TypeScript port in src/sync/smd (test/sync/smd/go-reference.ts builds and runs this). Reads one
// JSON case on stdin: an OpenAPI v3 group-version document, the kind, a predicted and a live
// object, a manager and a field set; writes what each operation gives, and what Argo CD's
// removeWebhookMutation steps give when run through the library (the steps written here from
// gitops-engine's pkg/diff as read, not copied).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util/proto"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

type input struct {
	Document json.RawMessage `json:"document"`
	// An OpenAPI v2 document (/openapi/v2): the schema is then built as Argo CD builds its parser.
	DocumentV2 json.RawMessage `json:"documentV2"`
	TypeName   string          `json:"typeName"`
	Predicted  map[string]any  `json:"predicted"`
	Live       map[string]any  `json:"live"`
	Manager    string          `json:"manager"`
	Remove     json.RawMessage `json:"remove"`
}

type output struct {
	FieldSet   json.RawMessage `json:"fieldSet,omitempty"`
	Removed    json.RawMessage `json:"removed,omitempty"`
	Merged     any             `json:"merged,omitempty"`
	RemovedOut any             `json:"removeItems,omitempty"`
	Result     any             `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	Validate   string          `json:"validate,omitempty"`
}

func setJSON(s *fieldpath.Set) json.RawMessage {
	b, err := s.ToJSON()
	if err != nil {
		panic(err)
	}
	return b
}

func managerSet(obj map[string]any, manager string) (*fieldpath.Set, error) {
	out := &fieldpath.Set{}
	md, _ := obj["metadata"].(map[string]any)
	mfs, _ := md["managedFields"].([]any)
	for _, e := range mfs {
		m, _ := e.(map[string]any)
		if m["manager"] != manager {
			continue
		}
		raw, _ := json.Marshal(m["fieldsV1"])
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
			return nil, err
		}
		out = out.Union(s)
	}
	return out, nil
}

func ownedAncestorsOut(toRemove, owned *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	toRemove.Iterate(func(p fieldpath.Path) {
		sub := owned
		for _, pe := range p {
			sub = sub.WithPrefix(pe)
			if sub.Empty() {
				break
			}
		}
		if sub.Empty() {
			out.Insert(p)
		}
	})
	return out
}

func compositeKeyField(p fieldpath.Path) bool {
	if len(p) == 0 || p[len(p)-1].FieldName == nil {
		return false
	}
	name := *p[len(p)-1].FieldName
	for i := len(p) - 2; i >= 0; i-- {
		if p[i].Key == nil || len(*p[i].Key) <= 1 {
			continue
		}
		for _, f := range *p[i].Key {
			if f.Name == name {
				return true
			}
		}
	}
	return false
}

func pipeline(pt typed.ParseableType, in input) (any, error) {
	tp, err := pt.FromUnstructured(in.Predicted)
	if err != nil {
		return nil, fmt.Errorf("predicted: %w", err)
	}
	tl, err := pt.FromUnstructured(in.Live)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	owned, err := managerSet(in.Predicted, in.Manager)
	if err != nil {
		return nil, err
	}
	if owned.Empty() {
		return nil, fmt.Errorf("no managed fields found for manager: %s", in.Manager)
	}
	all, err := tp.ToFieldSet()
	if err != nil {
		return nil, err
	}
	nonOwned := ownedAncestorsOut(all.Difference(owned), owned)
	cmp, err := tl.Compare(tp)
	if err != nil {
		return nil, err
	}
	removed := cmp.Removed
	if removed != nil && !removed.Empty() {
		removed = removed.Difference(nonOwned)
		liveOwned, err := managerSet(in.Live, in.Manager)
		if err != nil {
			return nil, err
		}
		removed = removed.Difference(ownedAncestorsOut(removed.Difference(liveOwned), liveOwned))
	}
	kept := fieldpath.NewSet()
	nonOwned.Iterate(func(p fieldpath.Path) {
		if !compositeKeyField(p) {
			kept.Insert(p)
		}
	})
	tp = tp.RemoveItems(kept)
	tp, err = tl.Merge(tp)
	if err != nil {
		return nil, err
	}
	tp = tp.RemoveItems(removed)
	return tp.AsValue().Unstructured(), nil
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		panic(err)
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		panic(err)
	}
	var s *schema.Schema
	if len(in.DocumentV2) > 0 {
		// Argo CD's path: proto models of the v2 document, then managedfields.NewGVKParser's conversion.
		doc, perr := openapi_v2.ParseDocument(in.DocumentV2)
		if perr != nil {
			panic(perr)
		}
		models, perr := proto.NewOpenAPIData(doc)
		if perr != nil {
			panic(perr)
		}
		s, err = schemaconv.ToSchemaWithPreserveUnknownFields(models, false)
	} else {
		var doc spec3.OpenAPI
		if err := json.Unmarshal(in.Document, &doc); err != nil {
			panic(err)
		}
		s, err = schemaconv.ToSchemaFromOpenAPI(doc.Components.Schemas, false)
	}
	out := output{}
	enc := json.NewEncoder(os.Stdout)
	if err != nil {
		out.Error = "schema: " + err.Error()
		_ = enc.Encode(out)
		return
	}
	parser := typed.Parser{Schema: *s}
	pt := parser.Type(in.TypeName)
	if _, err := pt.FromUnstructured(in.Live); err != nil {
		out.Validate = err.Error()
	}
	if tp, err := pt.FromUnstructured(in.Predicted); err == nil {
		if fs, err := tp.ToFieldSet(); err == nil {
			out.FieldSet = setJSON(fs)
		}
		if len(in.Remove) > 0 {
			rs := &fieldpath.Set{}
			if err := rs.FromJSON(bytes.NewReader(in.Remove)); err != nil {
				panic(err)
			}
			out.RemovedOut = tp.RemoveItems(rs).AsValue().Unstructured()
		}
		if tl, err := pt.FromUnstructured(in.Live); err == nil {
			if c, err := tl.Compare(tp); err == nil {
				out.Removed = setJSON(c.Removed)
			}
			if m, err := tl.Merge(tp); err == nil {
				out.Merged = m.AsValue().Unstructured()
			}
		}
	}
	if r, err := pipeline(pt, in); err != nil {
		out.Error = err.Error()
	} else {
		out.Result = r
	}
	_ = enc.Encode(out)
}
