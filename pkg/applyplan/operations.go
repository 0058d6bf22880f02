package applyplan

import (
	"errors"
	"fmt"
	"strings"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/mdops"
	"github.com/garden-bloom/memory/pkg/memlayout"
)

// Each update operation is one function, so what an operation does to its
// file can be read (and changed) without the others; Build only looks the
// operation up in operations and records the result.

// builder is what one Build shares with the operations it applies.
type builder struct {
	in    Input
	agent string
	runID string
	date  time.Time
	old   memlayout.Meta // meta.json before this proposal
	w     *workspace
	plan  *Plan
}

// edit is what one update does to its file.
type edit struct {
	next    string // the file's new content
	what    string // the changelog's words for it ("replaced", "closed L-3")
	removed bool   // the file is deleted instead; next is unused
}

// operation applies update i (u) to cur, the content of its file so far.
// Errors about the proposal are *Invalid naming updates[i].
type operation func(b *builder, i int, u *memoryv1.FileUpdate, cur string) (edit, error)

// operations are the update operations Build applies; any other is refused
// as unsupported.
var operations = map[memoryv1.Operation]operation{
	memoryv1.Operation_OPERATION_RESTORE:        (*builder).restoreFile,
	memoryv1.Operation_OPERATION_DELETE:         (*builder).deleteFile,
	memoryv1.Operation_OPERATION_REPLACE:        (*builder).replaceFile,
	memoryv1.Operation_OPERATION_WRITE_RUN:      (*builder).writeRun,
	memoryv1.Operation_OPERATION_WRITE_ARTIFACT: (*builder).writeArtifact,
	memoryv1.Operation_OPERATION_APPEND:         (*builder).appendFacts,
	memoryv1.Operation_OPERATION_REMOVE:         (*builder).removeFact,
	memoryv1.Operation_OPERATION_OPEN:           (*builder).openLoop,
	memoryv1.Operation_OPERATION_CLOSE:          (*builder).closeLoop,
	memoryv1.Operation_OPERATION_ADD_DECISION:   (*builder).addDecision,
}

// restoreFile writes the content byte for byte: what a snapshot (or an
// onboarding skeleton) holds.
func (b *builder) restoreFile(_ int, u *memoryv1.FileUpdate, cur string) (edit, error) {
	next := u.GetContent()
	if u.GetFile() == memlayout.FactsFile {
		// Facts a restore puts back are added by its commit: their age
		// restarts there, as for an append.
		b.plan.AddedFacts = append(b.plan.AddedFacts, newFacts(mdops.ParseFacts(cur), mdops.ParseFacts(next))...)
	}
	return edit{next: next, what: "written exactly as given"}, nil
}

// deleteFile removes a file that exists.
func (b *builder) deleteFile(i int, u *memoryv1.FileUpdate, _ string) (edit, error) {
	rel := u.GetFile()
	if _, ok, err := b.in.Read(rel); err != nil {
		return edit{}, err
	} else if !ok {
		return edit{}, invalidUpdate(i, "file", memoryv1.ErrorReason_ERROR_REASON_INVALID_PATH, "%s does not exist", rel)
	}
	return edit{what: "removed", removed: true}, nil
}

// replaceFile replaces the whole file. Replaced logic is kept under
// logic/versions/ (spec integration §1), named by the version it belonged
// to.
func (b *builder) replaceFile(_ int, u *memoryv1.FileUpdate, cur string) (edit, error) {
	rel, next := u.GetFile(), ensureNewline(u.GetContent())
	if f, _ := memlayout.Resolve(b.agent, rel); f.Kind == memlayout.KindLogicPseudo || f.Kind == memlayout.KindLogicDrakon {
		if cur != "" && cur != next {
			b.w.set(memlayout.LogicVersionFile(rel, b.old.Version), cur)
		}
	}
	return edit{next: next, what: "replaced"}, nil
}

// writeRun writes a run's summary: a replace the changelog calls written.
func (b *builder) writeRun(i int, u *memoryv1.FileUpdate, cur string) (edit, error) {
	e, err := b.replaceFile(i, u, cur)
	e.what = "written"
	return e, err
}

// writeArtifact keeps a run's artifact byte for byte.
func (b *builder) writeArtifact(_ int, u *memoryv1.FileUpdate, _ string) (edit, error) {
	return edit{next: u.GetContent(), what: "written"}, nil
}

// appendFacts adds facts to a section of facts.md, or records to an
// appendix section of decisions.md (below).
func (b *builder) appendFacts(i int, u *memoryv1.FileUpdate, cur string) (edit, error) {
	section := u.GetSection()
	if strings.TrimSpace(section) == "" {
		return edit{}, invalidUpdate(i, "section", memoryv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT, "append needs the section of facts.md to add to")
	}
	if u.GetFile() == memlayout.DecisionsFile {
		return b.appendRecords(u, cur)
	}
	before := mdops.ParseFacts(cur)
	next, added, err := mdops.AppendFacts(cur, b.agent, section, u.GetContent())
	if err != nil {
		return edit{}, mdopsInvalid(i, "content", err)
	}
	b.plan.AddedFacts = append(b.plan.AddedFacts, newFacts(before, mdops.ParseFacts(next))...)
	return edit{next: next, what: fmt.Sprintf("%d fact(s) added to %q", added, section)}, nil
}

// appendRecords adds bullet records under "## <section>" of decisions.md,
// as eviction does for § "Evicted facts": the write plane's fact TTL
// scheduler archives expired facts to § "Expired facts" this way. Only
// proposals the service makes carry it (Propose refuses append on
// decisions.md). Each record is a "- " line and the indented lines under it;
// a record already in the section is skipped, so a replay adds nothing.
func (b *builder) appendRecords(u *memoryv1.FileUpdate, cur string) (edit, error) {
	var records []string
	for _, l := range strings.Split(strings.ReplaceAll(u.GetContent(), "\r\n", "\n"), "\n") {
		switch {
		case strings.TrimSpace(l) == "":
		case len(records) > 0 && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")):
			records[len(records)-1] += "\n" + l
		default:
			records = append(records, l)
		}
	}
	next := mdops.AppendToDecisionsSection(cur, b.agent, u.GetSection(), records)
	return edit{next: next, what: fmt.Sprintf("%d record(s) added to %q", len(records), u.GetSection())}, nil
}

// removeFact removes one fact from facts.md.
func (b *builder) removeFact(i int, u *memoryv1.FileUpdate, cur string) (edit, error) {
	next, err := mdops.RemoveFact(cur, u.GetContent())
	if err != nil {
		return edit{}, mdopsInvalid(i, "content", fmt.Errorf("fact %q: %w", firstLine(u.GetContent()), err))
	}
	return edit{next: next, what: "1 fact removed"}, nil
}

// openLoop opens a loop in open_loops.md.
func (b *builder) openLoop(i int, u *memoryv1.FileUpdate, cur string) (edit, error) {
	next, id, err := mdops.OpenLoop(cur, b.agent, u.GetSection(), strings.TrimSpace(u.GetContent()), loopPriority(u.GetLoopPriority()), b.date)
	if err != nil {
		return edit{}, mdopsInvalid(i, "content", err)
	}
	return edit{next: next, what: "opened " + id}, nil
}

// closeLoop closes a loop of open_loops.md with its resolution.
func (b *builder) closeLoop(i int, u *memoryv1.FileUpdate, cur string) (edit, error) {
	next, err := mdops.CloseLoop(cur, u.GetLoopId(), u.GetResolution(), b.runID, b.date)
	if err != nil {
		return edit{}, mdopsInvalid(i, "loopId", fmt.Errorf("loop %q: %w", firstLine(u.GetLoopId()), err))
	}
	return edit{next: next, what: "closed " + u.GetLoopId()}, nil
}

// addDecision adds a decision record to decisions.md; one without a run is
// this proposal's run's.
func (b *builder) addDecision(i int, u *memoryv1.FileUpdate, cur string) (edit, error) {
	d := u.GetDecision()
	if d.GetRunId() == "" {
		d.RunId = b.runID
	}
	next, err := mdops.AddDecision(cur, b.agent, mdops.Decision{
		Title: d.GetTitle(), Status: d.GetStatus(), Context: d.GetContext(), Decision: d.GetDecision(),
		Rationale: d.GetRationale(), Consequences: d.GetConsequences(), RunID: d.GetRunId(),
	}, b.date)
	if err != nil {
		field := "decision"
		if fe := (*mdops.FieldError)(nil); errors.As(err, &fe) {
			field += "." + fe.Field
		}
		return edit{}, mdopsInvalid(i, field, err)
	}
	return edit{next: next, what: fmt.Sprintf("decision %q added", d.GetTitle())}, nil
}
