package benchharness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

// Read scenario names; a floor exists for each.
const (
	ScReadBasic = "ReadMemory basic"
	ScReadWide  = "ReadMemory wide"
	ScAssemble  = "AssembleContext"
	ScSearch    = "Search"
	ScGetEntity = "GetEntity"
	ScApply     = "propose → applied"
	ScSearchLag = "commit → searchable"
	ScReadLag   = "commit → readable"
)

// readTarget is where read requests go: the suite or a floor server.
type readTarget struct {
	ca   memoryv1.ContextAssemblyServiceClient
	si   memoryv1.SearchIndexServiceClient
	eg   memoryv1.EntityGraphServiceClient
	rest *http.Client
	base string
	tok  string
}

// workload draws requests from a data set: a random agent, query words
// from that agent's domain, shared entity ids.
type workload struct {
	m      *textModel
	seed   int64
	agents int
	// entities are the shared entity ids the data set links (small data
	// sets link only some of them); see findEntities.
	entities []string
}

// findEntities keeps the shared entities the entity graph knows.
func (w *workload) findEntities(ctx context.Context, eg memoryv1.EntityGraphServiceClient) error {
	w.entities = nil
	for _, id := range w.m.ids {
		if _, err := eg.GetEntity(ctx, &memoryv1.GetEntityRequest{EntityId: id}); err == nil {
			w.entities = append(w.entities, id)
		}
	}
	if len(w.entities) == 0 {
		return errors.New("the entity graph knows none of the shared entities")
	}
	return nil
}

func (w *workload) agent(r *rand.Rand) (int, string) {
	i := r.IntN(w.agents)
	return i, AgentID(i)
}

// query is n words from agent i's domain.
func (w *workload) query(r *rand.Rand, i, n int) string {
	dom := w.m.domain(w.seed, i)
	words := make([]string, n)
	for k := range words {
		words[k] = dom[r.IntN(len(dom))]
	}
	return strings.Join(words, " ")
}

func (w *workload) entity(r *rand.Rand) string { return w.entities[r.IntN(len(w.entities))] }

// grpcOp returns the gRPC read of a scenario.
func (w *workload) grpcOp(t readTarget, name string) op {
	switch name {
	case ScReadBasic, ScReadWide:
		mode := memoryv1.ReadMode_READ_MODE_BASIC
		if name == ScReadWide {
			mode = memoryv1.ReadMode_READ_MODE_WIDE
		}
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			_, id := w.agent(r)
			resp, err := t.ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: id, Mode: mode})
			return proto.Size(resp), err
		}
	case ScAssemble:
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			i, id := w.agent(r)
			resp, err := t.ca.AssembleContext(ctx, &memoryv1.AssembleContextRequest{AgentId: id, QueryHint: w.query(r, i, 3), Budget: 200000})
			return proto.Size(resp), err
		}
	case ScSearch:
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			i, id := w.agent(r)
			resp, err := t.si.Search(ctx, &memoryv1.SearchRequest{Query: w.query(r, i, 2), AgentId: id})
			return proto.Size(resp), err
		}
	case ScGetEntity:
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			resp, err := t.eg.GetEntity(ctx, &memoryv1.GetEntityRequest{EntityId: w.entity(r)})
			return proto.Size(resp), err
		}
	}
	panic("no gRPC op for " + name)
}

// restOp returns the REST read of a scenario (ReadMemory basic, Search).
func (w *workload) restOp(t readTarget, name string) op {
	get := func(ctx context.Context, path string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base+path, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+t.tok)
		resp, err := t.rest.Do(req)
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		n, err := io.Copy(io.Discard, resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return int(n), err
	}
	switch name {
	case ScReadBasic:
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			_, id := w.agent(r)
			return get(ctx, "/memory/"+id+"/read?mode=basic")
		}
	case ScSearch:
		return func(ctx context.Context, r *rand.Rand) (int, error) {
			i, id := w.agent(r)
			return get(ctx, "/memory/search?q="+url.QueryEscape(w.query(r, i, 2))+"&agent_id="+id)
		}
	}
	panic("no REST op for " + name)
}

// captureResponse returns the serialized response of a typical request of
// a read scenario (the median size of 15), for the floor server to answer.
func (w *workload) captureResponse(ctx context.Context, t readTarget, name string, seed int64) ([]byte, error) {
	r := rand.New(rand.NewPCG(uint64(seed), 0xf1004))
	var msgs [][]byte
	for range 15 {
		var resp proto.Message
		var err error
		i, id := w.agent(r)
		switch name {
		case ScReadBasic, ScReadWide:
			mode := memoryv1.ReadMode_READ_MODE_BASIC
			if name == ScReadWide {
				mode = memoryv1.ReadMode_READ_MODE_WIDE
			}
			resp, err = t.ca.ReadMemory(ctx, &memoryv1.ReadMemoryRequest{AgentId: id, Mode: mode})
		case ScAssemble:
			resp, err = t.ca.AssembleContext(ctx, &memoryv1.AssembleContextRequest{AgentId: id, QueryHint: w.query(r, i, 3), Budget: 200000})
		case ScSearch:
			resp, err = t.si.Search(ctx, &memoryv1.SearchRequest{Query: w.query(r, i, 2), AgentId: id})
		case ScGetEntity:
			resp, err = t.eg.GetEntity(ctx, &memoryv1.GetEntityRequest{EntityId: w.entity(r)})
		default:
			return nil, errors.New("no floor for " + name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		b, err := proto.Marshal(resp)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, b)
	}
	// Median by size.
	for i := range msgs {
		for j := i + 1; j < len(msgs); j++ {
			if len(msgs[j]) < len(msgs[i]) {
				msgs[i], msgs[j] = msgs[j], msgs[i]
			}
		}
	}
	return msgs[len(msgs)/2], nil
}
