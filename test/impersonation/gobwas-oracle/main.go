// Command gobwas-oracle answers glob questions with the real gobwas/glob v0.2.3 (the version Argo CD
// pins), compiled with no separators as Argo CD does. It reads a JSON array of
// {"pattern": string, "texts": [string]} on stdin and writes a JSON array of
// {"pattern", "error"} or {"pattern", "matches": [bool]}. It regenerates
// test/impersonation/fixtures/gobwas.json (see test/impersonation/glob-oracle.test.ts).
package main

import (
	"encoding/json"
	"os"

	"github.com/gobwas/glob"
)

type question struct {
	Pattern string   `json:"pattern"`
	Texts   []string `json:"texts"`
}

// safeMatch reports a panic inside the library (it has a few) instead of dying.
func safeMatch(g glob.Glob, text string, a *answer) (matched bool) {
	defer func() {
		if r := recover(); r != nil {
			a.Panics = append(a.Panics, text)
			matched = false
		}
	}()
	return g.Match(text)
}

type answer struct {
	Panics  []string `json:"panics,omitempty"`
	Pattern string   `json:"pattern"`
	Texts   []string `json:"texts"`
	Error   *string  `json:"error,omitempty"`
	Matches []bool   `json:"matches,omitempty"`
}

func main() {
	var questions []question
	if err := json.NewDecoder(os.Stdin).Decode(&questions); err != nil {
		panic(err)
	}
	answers := make([]answer, 0, len(questions))
	for _, q := range questions {
		a := answer{Pattern: q.Pattern, Texts: q.Texts}
		g, err := glob.Compile(q.Pattern)
		if err != nil {
			msg := err.Error()
			a.Error = &msg
		} else {
			a.Matches = make([]bool, len(q.Texts))
			for i, t := range q.Texts {
				a.Matches[i] = safeMatch(g, t, &a)
			}
		}
		answers = append(answers, a)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(answers); err != nil {
		panic(err)
	}
}
