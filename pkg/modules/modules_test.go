package modules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder builds modules that log their init, start and stop.
type recorder struct{ log []string }

func (r *recorder) module(name string, initErr, startErr error) func(context.Context) (Module, error) {
	return func(context.Context) (Module, error) {
		r.log = append(r.log, "init "+name)
		if initErr != nil {
			return nil, initErr
		}
		return Funcs{
			StartFunc: func(context.Context) error { r.log = append(r.log, "start "+name); return startErr },
			StopFunc:  func(context.Context) error { r.log = append(r.log, "stop "+name); return nil },
		}, nil
	}
}

// table is a small process: a server every process has, a repository,
// a writer and two readers, an edge, and "serve" after all of them.
func table(r *recorder, fail map[string]error) *Manager {
	m := New()
	reg := func(d Def) {
		d.Init = r.module(d.Name, fail["init "+d.Name], fail["start "+d.Name])
		m.Register(d)
	}
	reg(Def{Name: "server", Internal: true, Always: true})
	reg(Def{Name: "repo", Internal: true, Deps: []string{"server"}})
	reg(Def{Name: "writer", Deps: []string{"repo"}, In: []string{"all", "write"}})
	reg(Def{Name: "reader-a", Deps: []string{"repo"}, After: []string{"writer"}, In: []string{"all", "read"}})
	reg(Def{Name: "reader-b", Deps: []string{"repo"}, In: []string{"all", "read"}})
	reg(Def{Name: "edge", Deps: []string{"server"}, In: []string{"all", "read"}})
	reg(Def{Name: "serve", Internal: true, Always: true, Last: true, Deps: []string{"server"}})
	// Registered after serve, still started before it.
	reg(Def{Name: "late", Deps: []string{"server"}, In: []string{"all"}})
	return m
}

func TestCompositesAreComputedFromTheRows(t *testing.T) {
	m := table(&recorder{}, nil)
	require.Equal(t, []string{"writer", "reader-a", "reader-b", "edge", "late"}, m.Composite("all"))
	require.Equal(t, []string{"reader-a", "reader-b", "edge"}, m.Composite("read"))
	require.Equal(t, []string{"writer"}, m.Composite("write"))
	require.Equal(t, []string{"all", "write", "read", "writer", "reader-a", "reader-b", "edge", "late"}, m.Targets())
}

func TestExpandPullsInDependenciesInOrder(t *testing.T) {
	m := table(&recorder{}, nil)
	for target, want := range map[string][]string{
		"write":          {"server", "repo", "writer", "serve"},
		"read":           {"server", "repo", "reader-a", "reader-b", "edge", "serve"},
		"edge":           {"server", "edge", "serve"},
		"edge, reader-b": {"server", "repo", "reader-b", "edge", "serve"},
		"all,reader-a":   {"server", "repo", "writer", "reader-a", "reader-b", "edge", "late", "serve"},
		"late":           {"server", "late", "serve"},
	} {
		got, err := m.Expand(target)
		require.NoError(t, err, target)
		require.Equal(t, want, got, target)
	}
	for _, bad := range []string{"", "repo", "server", "nope", "read,"} {
		_, err := m.Expand(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "unknown target", bad)
	}
}

func TestRegisterRefusesUnknownDependencyAndDuplicates(t *testing.T) {
	m := New()
	noop := func(context.Context) (Module, error) { return Funcs{}, nil }
	require.Panics(t, func() { m.Register(Def{Name: "a", Init: noop, Deps: []string{"b"}}) })
	m.Register(Def{Name: "b", Init: noop})
	require.Panics(t, func() { m.Register(Def{Name: "b", Init: noop}) })
	require.Panics(t, func() { m.Register(Def{Name: "c", Init: noop, After: []string{"z"}}) })
}

func TestStartInOrderStopInReverse(t *testing.T) {
	r := &recorder{}
	m := table(r, nil)
	names, err := m.Expand("write")
	require.NoError(t, err)
	run, err := m.Init(context.Background(), names)
	require.NoError(t, err)
	require.NoError(t, run.Start(context.Background()))
	require.NoError(t, run.Stop(context.Background()))
	require.Equal(t, strings.Fields("init server init repo init writer init serve "+
		"start server start repo start writer start serve "+
		"stop serve stop writer stop repo stop server"), pairs(r.log))
	require.NoError(t, run.Stop(context.Background()), "a second Stop stops nothing twice")
	require.Len(t, r.log, 12)
}

// A failed init releases what the modules before it acquired; a failed
// start stops every module, started or not.
func TestFailuresReleaseWhatWasAcquired(t *testing.T) {
	r := &recorder{}
	m := table(r, map[string]error{"init writer": errors.New("locked")})
	names, _ := m.Expand("write")
	_, err := m.Init(context.Background(), names)
	require.ErrorContains(t, err, "writer: locked")
	require.Equal(t, strings.Fields("init server init repo init writer stop repo stop server"), pairs(r.log))

	r = &recorder{}
	m = table(r, map[string]error{"start repo": errors.New("no disk")})
	run, err := m.Init(context.Background(), names)
	require.NoError(t, err)
	err = run.Start(context.Background())
	require.ErrorContains(t, err, "repo: no disk")
	require.Equal(t, strings.Fields("init server init repo init writer init serve start server start repo "+
		"stop serve stop writer stop repo stop server"), pairs(r.log))
}

func TestStatesReportReadinessAndWhy(t *testing.T) {
	m := New()
	var caught CaughtUp
	m.Register(Def{Name: "edge", Init: func(context.Context) (Module, error) { return Funcs{}, nil }})
	m.Register(Def{Name: "index", Init: func(context.Context) (Module, error) { return Funcs{ReadyFunc: caught.Ready}, nil }})
	run, err := m.Init(context.Background(), []string{"edge", "index"})
	require.NoError(t, err)
	require.Equal(t, []State{{Name: "edge"}, {Name: "index", Err: errNotCaughtUp}}, run.States())

	caught.Observe(errors.New("repository not found"))
	st := run.States()[1]
	require.ErrorContains(t, st.Err, "catching up with the repository")
	require.ErrorContains(t, st.Err, "repository not found")

	caught.Observe(nil)
	require.NoError(t, run.States()[1].Err)
	caught.Observe(errors.New("a later failure"))
	require.NoError(t, run.States()[1].Err, "readiness latches: a follower a commit behind stays ready")
}

// pairs joins "verb name" log entries into single tokens for comparison
// with strings.Fields.
func pairs(log []string) []string {
	var out []string
	for _, l := range log {
		out = append(out, strings.Fields(l)...)
	}
	return out
}
