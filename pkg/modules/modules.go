// Package modules puts a process together from a table of modules, the way
// Grafana Tempo's cmd/tempo/app/modules.go does: each module is registered
// once with its init function, the modules it needs and the composite
// targets it belongs to ("all", "read", "write" are computed from those rows,
// never listed by hand). A --target expands to its modules and their
// dependencies in dependency order; the Manager initialises them in that
// order, starts them in that order and stops them in reverse, so a module
// always runs between the start and the stop of everything it uses.
package modules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Module is the lifecycle every module has.
type Module interface {
	// Start begins the module's work and returns once it is under way;
	// background work runs until Stop.
	Start(ctx context.Context) error
	// Stop ends the work and releases what Init acquired. It is also
	// called on a module that was initialised but never started (a later
	// module's init failed), and must then only release.
	Stop(ctx context.Context) error
	// Ready is nil once the module serves what it should (caught up with
	// the repository, open, ...), else why not.
	Ready() error
}

// Funcs is a Module made of functions; a nil function does nothing (Ready:
// is ready).
type Funcs struct {
	StartFunc func(ctx context.Context) error
	StopFunc  func(ctx context.Context) error
	ReadyFunc func() error
}

// Start implements Module.
func (f Funcs) Start(ctx context.Context) error {
	if f.StartFunc == nil {
		return nil
	}
	return f.StartFunc(ctx)
}

// Stop implements Module.
func (f Funcs) Stop(ctx context.Context) error {
	if f.StopFunc == nil {
		return nil
	}
	return f.StopFunc(ctx)
}

// Ready implements Module.
func (f Funcs) Ready() error {
	if f.ReadyFunc == nil {
		return nil
	}
	return f.ReadyFunc()
}

// Def is one row of the table.
type Def struct {
	Name string
	// Init builds the module. It runs after the Init of every module in
	// Deps (and in After, when those run too).
	Init func(ctx context.Context) (Module, error)
	// Deps must run for this module to run: a target pulls them in.
	Deps []string
	// After orders this module after these when they run, without
	// pulling them in.
	After []string
	// In names the composite targets that include this module.
	In []string
	// Internal modules are not targets of their own: they run because
	// another module needs them (or Always).
	Internal bool
	// Always modules run in every process.
	Always bool
	// Last modules start after, and stop before, every other module of
	// the process (the servers: serve once every handler is registered,
	// drain before anything they call stops).
	Last bool
}

// Manager is the table.
type Manager struct {
	defs  map[string]Def
	order []string // registration order: ties in dependency order keep it
}

// New returns an empty table.
func New() *Manager { return &Manager{defs: map[string]Def{}} }

// Register adds a row. Registering a name twice, or naming a dependency
// not registered yet, is a programming error and panics.
func (m *Manager) Register(d Def) {
	if _, dup := m.defs[d.Name]; dup || d.Name == "" || d.Init == nil {
		panic(fmt.Sprintf("modules: bad or duplicate module %q", d.Name))
	}
	for _, dep := range slices.Concat(d.Deps, d.After) {
		if _, ok := m.defs[dep]; !ok {
			panic(fmt.Sprintf("modules: %s: dependency %q is not registered (register it first)", d.Name, dep))
		}
	}
	m.defs[d.Name] = d
	m.order = append(m.order, d.Name)
}

// Composite lists the modules of a composite target, in registration order.
func (m *Manager) Composite(name string) []string {
	var out []string
	for _, n := range m.order {
		if slices.Contains(m.defs[n].In, name) {
			out = append(out, n)
		}
	}
	return out
}

// Targets lists every name --target accepts: the composites, then the
// modules that are not internal.
func (m *Manager) Targets() []string {
	var comps, mods []string
	for _, n := range m.order {
		d := m.defs[n]
		for _, c := range d.In {
			if !slices.Contains(comps, c) {
				comps = append(comps, c)
			}
		}
		if !d.Internal {
			mods = append(mods, n)
		}
	}
	return append(comps, mods...)
}

// Expand turns a target (a comma list of modules and composites) into the
// modules to run — those named, their dependencies and the Always ones —
// in dependency order.
func (m *Manager) Expand(target string) ([]string, error) {
	want := map[string]bool{}
	var add func(string)
	add = func(n string) {
		if want[n] {
			return
		}
		want[n] = true
		for _, dep := range m.defs[n].Deps {
			add(dep)
		}
	}
	for _, part := range strings.Split(target, ",") {
		name := strings.TrimSpace(part)
		if comp := m.Composite(name); len(comp) > 0 {
			for _, n := range comp {
				add(n)
			}
			continue
		}
		if d, ok := m.defs[name]; ok && !d.Internal {
			add(name)
			continue
		}
		return nil, fmt.Errorf("unknown target %q (want one of %s)", name, strings.Join(m.Targets(), ", "))
	}
	for _, n := range m.order {
		if m.defs[n].Always {
			add(n)
		}
	}
	// Register panics on a dependency registered later, so registration
	// order is already a dependency order; keeping it keeps ties stable.
	var out, last []string
	for _, n := range m.order {
		switch {
		case !want[n]:
		case m.defs[n].Last:
			last = append(last, n)
		default:
			out = append(out, n)
		}
	}
	return append(out, last...), nil
}

// Running is the modules of one process after Init.
type Running struct {
	mu    sync.Mutex // States may be asked (/health) while Stop runs
	names []string
	mods  []Module
}

// Init initialises the named modules (from Expand) in order. When one
// fails, those already initialised are stopped in reverse.
func (m *Manager) Init(ctx context.Context, names []string) (*Running, error) {
	r := &Running{}
	for _, n := range names {
		mod, err := m.defs[n].Init(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", n, err), r.Stop(context.WithoutCancel(ctx)))
		}
		r.mu.Lock()
		r.names = append(r.names, n)
		r.mods = append(r.mods, mod)
		r.mu.Unlock()
	}
	return r, nil
}

// Start starts every module in order. When one fails, every module is
// stopped in reverse (the started and the merely initialised).
func (r *Running) Start(ctx context.Context) error {
	for i, mod := range r.mods {
		if err := mod.Start(ctx); err != nil {
			return errors.Join(fmt.Errorf("%s: %w", r.names[i], err), r.Stop(context.WithoutCancel(ctx)))
		}
	}
	return nil
}

// Stop stops every module in reverse order, each once, and returns their
// errors joined.
func (r *Running) Stop(ctx context.Context) error {
	r.mu.Lock()
	names, mods := r.names, r.mods
	r.names, r.mods = nil, nil
	r.mu.Unlock()
	var errs []error
	for i := len(mods) - 1; i >= 0; i-- {
		if err := mods[i].Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", names[i], err))
		}
	}
	return errors.Join(errs...)
}

// State is one module's readiness.
type State struct {
	Name string
	// Err is nil when ready, else why not.
	Err error
}

// States reports every module's readiness, in start order.
func (r *Running) States() []State {
	r.mu.Lock()
	names, mods := r.names, r.mods
	r.mu.Unlock()
	out := make([]State, len(mods))
	for i, mod := range mods {
		out[i] = State{Name: names[i], Err: mod.Ready()}
	}
	return out
}
