package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/episode"
)

// The benchmark's episodes are valid by the write plane's own rules,
// varied, spread over the agents, and the same for a seed.
func TestGeneratedEpisodesAreValidAndVaried(t *testing.T) {
	data := generateEpisodes(300, 7, 27)
	require.Equal(t, data, generateEpisodes(300, 7, 27), "deterministic for a seed")
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	require.Len(t, lines, 300)
	agents, outcomes, ids := map[string]int{}, map[string]int{}, map[string]bool{}
	for _, l := range lines {
		req := &memoryv1.IngestEpisodeRequest{}
		require.NoError(t, protojson.Unmarshal(l, req), string(l))
		require.NoError(t, episode.Normalize(req.GetEpisode(), time.Now()), string(l))
		agents[req.GetAgentId()]++
		outcomes[req.GetEpisode().GetOutcome().GetStatus()]++
		require.False(t, ids[req.GetEpisode().GetEpisodeId()], "episode ids are unique")
		ids[req.GetEpisode().GetEpisodeId()] = true
	}
	require.Len(t, agents, 7)
	require.Len(t, outcomes, 3, "success, failure and partial")
	require.Greater(t, outcomes["failure"], 30)
}
