package mdops

import (
	"errors"
	"testing"
)

func TestParseDecisionBlock(t *testing.T) {
	// The spec's own block (DiffMem §3.2), placeholders filled.
	spec := "# Decisions: garden-bloom-curator\n\n## 2026-02-17 — Увімкнути versioning\n**Статус:** Прийнято\n**Контекст:** Потрібен відкат\n**Рішення:** Увімкнути versioning\n**Обґрунтування:** Відновлення без копій\n**Наслідки:** Кожен запис має версію\n**Run:** run_abc123\n"
	d, err := ParseDecisionBlock(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := Decision{ID: "2026-02-17-увімкнути-versioning", Title: "Увімкнути versioning", Status: "Прийнято", Context: "Потрібен відкат",
		Decision: "Увімкнути versioning", Rationale: "Відновлення без копій", Consequences: "Кожен запис має версію", RunID: "run_abc123", Date: d.Date}
	if d != want || d.Date.Format("2006-01-02") != "2026-02-17" {
		t.Fatalf("got %+v\nwant %+v", d, want)
	}
	en, err := ParseDecisionBlock("## 2026-02-18 - Use MinIO\n**Status:** accepted\n**Context:** line one\nline two\n")
	if err != nil || en.Title != "Use MinIO" || en.Status != "accepted" || en.Context != "line one\nline two" {
		t.Fatalf("english block: %+v %v", en, err)
	}
	for name, md := range map[string]string{
		"no heading":    "**Status:** accepted\n",
		"no date":       "## Use MinIO\n**Status:** accepted\n",
		"two entries":   "## 2026-02-17 — A\n**Status:** x\n\n## 2026-02-18 — B\n**Status:** y\n",
		"no fields":     "## 2026-02-17 — A\njust text\n",
		"text before":   "intro\n## 2026-02-17 — A\n**Status:** x\n",
		"section after": "## 2026-02-17 — A\n**Status:** x\n# Other\n",
		"bad date":      "## 2026-13-45 — A\n**Status:** x\n",
	} {
		if _, err := ParseDecisionBlock(md); !errors.Is(err, ErrBadContent) {
			t.Errorf("%s: want ErrBadContent, got %v", name, err)
		}
	}
}
