package proposalapply

import (
	"context"
	"regexp"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/authz"
	"github.com/garden-bloom/memory/pkg/episode"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// IngestEpisode turns one structured episode into one proposal (spec AI
// Skills Memory Protocol §8.4, docs/episodes.md): pkg/episode normalises
// and validates it and builds the proposal — its run file, facts and
// decisions — which then takes Propose's own path, so validation, policy,
// auto-approval, durability and the semantic guard apply unchanged.
// Re-ingesting an episode returns the proposal it became (duplicate=true),
// whatever has happened to it since.
func (h *handler) IngestEpisode(ctx context.Context, req *memoryv1.IngestEpisodeRequest) (*memoryv1.IngestEpisodeResponse, error) {
	agent := req.GetAgentId()
	if !memlayout.ValidAgentID(agent) {
		return nil, apierr.Invalid(memoryv1.ErrorReason_ERROR_REASON_INVALID_AGENT_ID, "agentId", "agentId must be a slug [a-z0-9][a-z0-9-]{0,63}")
	}
	// Who asks comes before what is asked, as for Propose.
	if _, err := authz.RequireAgent(ctx, agent, proposeRoles...); err != nil {
		return nil, err
	}
	if req.GetEpisode() == nil {
		return nil, apierr.InvalidArgument("episode", "episode is required")
	}
	// The caller's message is not ours to change.
	ep := proto.Clone(req.GetEpisode()).(*memoryv1.Episode)
	if err := episode.Normalize(ep, h.svc.now()); err != nil {
		return nil, err
	}
	propose := episode.Proposal(agent, ep, req.AutoApprove)
	resp := &memoryv1.IngestEpisodeResponse{EpisodeId: ep.GetEpisodeId(), RunFile: episode.RunFile(ep)}

	// A replay is answered from the store, before the proposal is planned
	// again on a head that its own commit may have changed since.
	prior, err := h.svc.store.FindIdempotent(agent, propose.GetRunId(), propose.GetIdempotencyKey())
	if err != nil {
		return nil, h.svc.internal(err, "reading the proposal store")
	}
	if prior != nil {
		resp.Proposal, resp.Duplicate = proposeResponse(prior.Proposal), true
		return resp, nil
	}
	p, err := h.propose(ctx, propose, false)
	if err != nil {
		return nil, episodeError(ep, err)
	}
	resp.Proposal = p
	return resp, nil
}

// updateRef is how the propose path's errors name an update.
var updateRef = regexp.MustCompile(`updates\[\d+\](?:\.[A-Za-z]+)*`)

// episodeError renames the proposal field an error of the propose path
// names ("updates[2].decision.title", in its metadata and its message)
// after the episode field it came from ("episode.decisions[0].title"), so
// the caller reads what it sent; an error about an update that names no
// field (a token limit) gets the update's episode field. Other errors pass
// unchanged.
func episodeError(ep *memoryv1.Episode, err error) error {
	info := apierr.Info(err)
	st, ok := status.FromError(err)
	if info == nil || !ok {
		return err
	}
	field := info.GetMetadata()["field"]
	if field == "" {
		field = updateRef.FindString(st.Message())
	}
	renamed, ok := episode.UpdateField(ep, field)
	if !ok {
		return err
	}
	md := make(map[string]string, len(info.GetMetadata())+1)
	for k, v := range info.GetMetadata() {
		md[k] = v
	}
	md["field"] = renamed
	msg := updateRef.ReplaceAllStringFunc(st.Message(), func(ref string) string {
		if f, ok := episode.UpdateField(ep, ref); ok {
			return f
		}
		return ref
	})
	reason := memoryv1.ErrorReason(memoryv1.ErrorReason_value["ERROR_REASON_"+info.GetReason()])
	return apierr.New(st.Code(), reason, msg, md)
}
