// Package memlayout is the one place that knows the memory monorepo's layout:
// which files an agent has, which layer each belongs to, their token limits,
// and which operations a proposal may apply to each. Paths come only from
// this allow-list, so no proposal can name a path outside memory/<agentId>/
// or logic/<agentId>/.
package memlayout

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/enumname"
)

// Kind is what a memory file is.
type Kind string

// The kinds of file an agent has.
const (
	KindSnapshot    Kind = "snapshot"
	KindFacts       Kind = "facts"
	KindOpenLoops   Kind = "open_loops"
	KindDecisions   Kind = "decisions"
	KindChangelog   Kind = "changelog"
	KindTimeline    Kind = "timeline"
	KindRun         Kind = "run"
	KindMeta        Kind = "meta"
	KindPolicy      Kind = "policy"
	KindLogicPseudo Kind = "logic_pseudo"
	KindLogicDrakon Kind = "logic_drakon"
	// KindArtifact is a file a run produced, runs/run_<id>/artifacts/<name>
	// (spec integration §1).
	KindArtifact Kind = "artifact"
	// KindLogicVersion is a previous logic file the engine kept when
	// logic/current.* was replaced: logic/versions/v<version>/current.*.
	KindLogicVersion Kind = "logic_version"
)

// Relative names of an agent's fixed files.
const (
	SnapshotFile  = "snapshot.md"
	FactsFile     = "facts.md"
	OpenLoopsFile = "open_loops.md"
	DecisionsFile = "decisions.md"
	ChangelogFile = "changelog.md"
	MetaFile      = "meta.json"
	PolicyFile    = "policy.json"
	LogicPseudo   = "logic/current.pseudo.md"
	LogicDrakon   = "logic/current.drakon.json"
)

// Hard token limits (spec DiffMem §11.2, §3.3).
const (
	SnapshotLimit  = 2000
	FactsLimit     = 8000
	OpenLoopsLimit = 2000
	Layer1Limit    = 12000
	RunLimit       = 8000
	// TimelineDayLimit bounds one day's timeline file (spec DiffMem §3.2);
	// older entries of the day are folded into a summary line.
	TimelineDayLimit = 2000
	// ChangelogKeep is how many changelog entries the file keeps.
	ChangelogKeep = 30
)

// Errors, matched with errors.Is.
var (
	ErrInvalidPath      = errors.New("file is not on the allow-list")
	ErrInvalidOperation = errors.New("operation not allowed on this file")
)

var (
	runFileRe  = regexp.MustCompile(`^runs/run_([A-Za-z0-9_-]{1,64})\.md$`)
	timelineRe = regexp.MustCompile(`^timeline/(\d{4}-\d{2}-\d{2})\.md$`)
	// An artifact name: letters, digits, '.', '_' and '-', not starting
	// with '.', so no name can climb out of its folder or hide.
	artifactRe     = regexp.MustCompile(`^runs/run_[A-Za-z0-9_-]{1,64}/artifacts/[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)
	logicVersionRe = regexp.MustCompile(`^logic/versions/v[0-9]{1,10}/current\.(pseudo\.md|drakon\.json)$`)
	agentIDRe      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	runIDRe        = regexp.MustCompile(`^(run_)?[A-Za-z0-9_-]{1,64}$`)
)

// ValidAgentID reports whether id is a slug [a-z0-9][a-z0-9-]{0,63}.
func ValidAgentID(id string) bool { return agentIDRe.MatchString(id) }

// ValidRunID reports whether id is a run id ("run_abc123" or "abc123").
func ValidRunID(id string) bool { return runIDRe.MatchString(id) }

// RunRef returns the run id in its "run_<id>" form.
func RunRef(id string) string {
	if len(id) >= 4 && id[:4] == "run_" {
		return id
	}
	return "run_" + id
}

// Bookkeeping reports the files (relative to the agent folder) the engine
// updates in every commit besides the proposal's own: meta.json, the
// changelog and the timeline.
func Bookkeeping(rel string) bool {
	return rel == MetaFile || rel == ChangelogFile || strings.HasPrefix(rel, "timeline/")
}

// MemoryDir is the folder of every agent's memory folder.
const MemoryDir = "memory"

// AgentDir is the agent's memory folder, with a trailing slash.
func AgentDir(agentID string) string { return MemoryDir + "/" + agentID + "/" }

// LogicDir is the agent's logic folder, with a trailing slash.
func LogicDir(agentID string) string { return "logic/" + agentID + "/" }

// File is a resolved memory file.
type File struct {
	// Rel is the name relative to the agent ("facts.md", "logic/current.pseudo.md").
	Rel string
	// Path is the repository path.
	Path  string
	Kind  Kind
	Layer int // 1, 2, or 0 for logic, meta and policy
}

// Resolve maps a file name relative to the agent to its repository path.
func Resolve(agentID, rel string) (File, error) {
	if !ValidAgentID(agentID) {
		return File{}, fmt.Errorf("agent id %q: not a slug", agentID)
	}
	f := File{Rel: rel, Path: AgentDir(agentID) + rel}
	switch {
	case rel == SnapshotFile:
		f.Kind, f.Layer = KindSnapshot, 1
	case rel == FactsFile:
		f.Kind, f.Layer = KindFacts, 1
	case rel == OpenLoopsFile:
		f.Kind, f.Layer = KindOpenLoops, 1
	case rel == DecisionsFile:
		f.Kind, f.Layer = KindDecisions, 2
	case rel == ChangelogFile:
		f.Kind, f.Layer = KindChangelog, 2
	case rel == MetaFile:
		f.Kind = KindMeta
	case rel == PolicyFile:
		f.Kind = KindPolicy
	case rel == LogicPseudo:
		f.Kind, f.Path = KindLogicPseudo, LogicDir(agentID)+"current.pseudo.md"
	case rel == LogicDrakon:
		f.Kind, f.Path = KindLogicDrakon, LogicDir(agentID)+"current.drakon.json"
	case runFileRe.MatchString(rel):
		f.Kind, f.Layer = KindRun, 2
	case timelineRe.MatchString(rel):
		f.Kind, f.Layer = KindTimeline, 2
	case artifactRe.MatchString(rel) && !strings.Contains(rel, ".."):
		f.Kind, f.Layer = KindArtifact, 2
	case logicVersionRe.MatchString(rel):
		f.Kind, f.Path = KindLogicVersion, LogicDir(agentID)+rel[len("logic/"):]
	default:
		return File{}, fmt.Errorf("%w: %q", ErrInvalidPath, rel)
	}
	return f, nil
}

// RunIDOfFile returns the run id of a runs/run_<id>.md name.
func RunIDOfFile(rel string) string {
	m := runFileRe.FindStringSubmatch(rel)
	if m == nil {
		return ""
	}
	return "run_" + m[1]
}

// LogicVersionFile is where the engine keeps the logic file rel
// ("logic/current.pseudo.md") as it was before the commit that made
// version v replaced it.
func LogicVersionFile(rel string, v int32) string {
	return fmt.Sprintf("logic/versions/v%d/%s", v, rel[len("logic/"):])
}

// TimelineFile is the timeline file of a UTC date "YYYY-MM-DD".
func TimelineFile(date string) string { return "timeline/" + date + ".md" }

// proposable lists the operations a proposal may apply to each kind; files
// the engine maintains itself (changelog, timeline, meta) are not proposable.
var proposable = map[Kind][]memoryv1.Operation{
	KindSnapshot:    {memoryv1.Operation_OPERATION_REPLACE},
	KindFacts:       {memoryv1.Operation_OPERATION_APPEND, memoryv1.Operation_OPERATION_REMOVE},
	KindOpenLoops:   {memoryv1.Operation_OPERATION_OPEN, memoryv1.Operation_OPERATION_CLOSE},
	KindDecisions:   {memoryv1.Operation_OPERATION_ADD_DECISION},
	KindRun:         {memoryv1.Operation_OPERATION_WRITE_RUN},
	KindArtifact:    {memoryv1.Operation_OPERATION_WRITE_ARTIFACT},
	KindLogicPseudo: {memoryv1.Operation_OPERATION_REPLACE},
	KindLogicDrakon: {memoryv1.Operation_OPERATION_REPLACE},
	KindPolicy:      {memoryv1.Operation_OPERATION_REPLACE},
}

// Restorable reports whether a snapshot restore puts files of kind k back.
// meta.json, the changelog and the timeline are the engine's record of what
// happened, restores included, and are never rolled back.
func Restorable(k Kind) bool {
	switch k {
	case KindSnapshot, KindFacts, KindOpenLoops, KindDecisions, KindRun, KindArtifact, KindPolicy:
		return true
	}
	return false
}

// CheckOperation reports whether op may be proposed on f.
func CheckOperation(f File, op memoryv1.Operation) error {
	ops, ok := proposable[f.Kind]
	if !ok {
		return fmt.Errorf("%w: %s is maintained by the service", ErrInvalidOperation, f.Rel)
	}
	if !slices.Contains(ops, op) {
		var names []string
		for _, o := range ops {
			names = append(names, OperationName(o))
		}
		return fmt.Errorf("%w: %q on %s (allowed: %v)", ErrInvalidOperation, OperationName(op), f.Rel, names)
	}
	return nil
}

// OperationName is the spec's lowercase name of an operation ("append").
func OperationName(op memoryv1.Operation) string { return enumname.Name(op) }
