package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// Entry is one component of one plugin binary.
type Entry struct {
	// Binary is the plugin binary's path.
	Binary string
	// Checksum is the binary's SHA-256 when it was scanned.
	Checksum  []byte
	Component client.Component
}

// Problem is a plugin file the scan could not use, and why.
type Problem struct {
	Path string
	Err  error
}

func (p Problem) Error() string { return p.Err.Error() }

func (p Problem) Unwrap() error { return p.Err }

// ErrUnknownPlugin is wrapped by Lookup's error when no component of that
// kind answers to the name.
var ErrUnknownPlugin = errors.New("unknown plugin")

// Registry indexes the components of the plugin binaries a scan found. It
// does not change after Scan and is safe for concurrent use.
type Registry struct {
	entries []Entry                     // sorted by kind (pipeline order), then name
	byName  map[sdk.Kind]map[string]int // name or alias → index in entries
	names   map[sdk.Kind][]string       // sorted component names per kind
}

// Lookup finds the component of kind named name (or aliased so).
func (r *Registry) Lookup(kind sdk.Kind, name string) (Entry, error) {
	if i, ok := r.byName[kind][name]; ok {
		return r.entries[i], nil
	}
	return Entry{}, &unknownError{kind: kind, name: name, known: r.names[kind]}
}

type unknownError struct {
	kind  sdk.Kind
	name  string
	known []string
}

func (e *unknownError) Error() string {
	if len(e.known) == 0 {
		return fmt.Sprintf("unknown %s plugin %q; no %s plugins were found in plugin.path", e.kind, e.name, e.kind)
	}
	return fmt.Sprintf("unknown %s plugin %q; known: %s", e.kind, e.name, strings.Join(e.known, ", "))
}

func (e *unknownError) Unwrap() error { return ErrUnknownPlugin }

// Components lists every component, sorted by kind (source, partitioner,
// sink, maintenance) and then by name.
func (r *Registry) Components() []Entry {
	return slices.Clone(r.entries)
}

// Start starts the binary of e with the checksum recorded when it was
// scanned: opts.Path and opts.Checksum are filled in from e. A binary
// replaced since the scan is refused, with an error saying to re-scan.
func (r *Registry) Start(ctx context.Context, e Entry, opts client.StartOptions) (*client.Process, error) {
	opts.Path = e.Binary
	opts.Checksum = e.Checksum
	return client.Start(ctx, opts)
}

// build indexes the components of the scanned binaries, in scan order. A
// component whose name or alias an earlier binary already declared for the
// same kind is left out, with a problem naming both files.
func build(bins []binary) (*Registry, []Problem) {
	r := &Registry{byName: map[sdk.Kind]map[string]int{}, names: map[sdk.Kind][]string{}}
	owner := map[sdk.Kind]map[string]string{} // name or alias → binary
	var problems []Problem
	type pending struct {
		e    Entry
		keys []string
	}
	var keep []pending
	for _, b := range bins {
		for _, c := range b.components {
			if owner[c.Kind] == nil {
				owner[c.Kind] = map[string]string{}
			}
			keys := append([]string{c.Name}, c.Aliases...)
			clash := ""
			for _, k := range keys {
				if other, ok := owner[c.Kind][k]; ok {
					clash = fmt.Sprintf("%s component %q is declared by both %s and %s; remove one of them (floe uses the one in %s)",
						c.Kind, k, other, b.path, other)
					break
				}
			}
			if clash != "" {
				problems = append(problems, Problem{Path: b.path, Err: errors.New(clash)})
				continue
			}
			for _, k := range keys {
				owner[c.Kind][k] = b.path
			}
			keep = append(keep, pending{e: Entry{Binary: b.path, Checksum: b.checksum, Component: c}, keys: keys})
		}
	}
	order := map[sdk.Kind]int{}
	for i, k := range sdk.AllKinds() {
		order[k] = i
	}
	slices.SortStableFunc(keep, func(a, b pending) int {
		if d := order[a.e.Component.Kind] - order[b.e.Component.Kind]; d != 0 {
			return d
		}
		return strings.Compare(a.e.Component.Name, b.e.Component.Name)
	})
	for i, p := range keep {
		kind := p.e.Component.Kind
		r.entries = append(r.entries, p.e)
		if r.byName[kind] == nil {
			r.byName[kind] = map[string]int{}
		}
		for _, k := range p.keys {
			r.byName[kind][k] = i
		}
		r.names[kind] = append(r.names[kind], p.e.Component.Name)
	}
	return r, problems
}
