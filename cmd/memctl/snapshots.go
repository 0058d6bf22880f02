package main

import (
	"github.com/spf13/cobra"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
)

func (c *cli) snapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "snapshot",
		Aliases: []string{"snapshots"},
		Short:   "Create, list and restore tar.gz snapshots of an agent's memory",
		Example: `  memctl snapshot create my-agent --label before-refactor
  memctl snapshot list my-agent
  memctl snapshot restore my-agent snapshot_before-refactor`,
		Args: exactArgs(0, "a subcommand"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(c.snapshotCreateCommand(), c.snapshotListCommand(), c.snapshotRestoreCommand())
	return cmd
}

func (c *cli) snapshotCreateCommand() *cobra.Command {
	var label, commit string
	var runs bool
	cmd := &cobra.Command{
		Use:   "create AGENT",
		Short: "Snapshot an agent's memory at a commit (CreateSnapshot)",
		Example: `  memctl snapshot create my-agent
  memctl snapshot create my-agent --label before-refactor --include-runs -o json`,
		Args: exactArgs(1, "AGENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.write.CreateSnapshot(cmd.Context(), &memoryv1.CreateSnapshotRequest{AgentId: args[0], Label: label, IncludeRuns: runs, Commit: commit})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				snapshotRows(t, []*memoryv1.Snapshot{resp.GetSnapshot()})
			})
		},
	}
	cmd.Flags().StringVar(&label, "label", "", "name of the snapshot (default: its time)")
	cmd.Flags().StringVar(&commit, "commit", "", "commit to snapshot (default HEAD)")
	cmd.Flags().BoolVar(&runs, "include-runs", false, "include runs/ in the archive")
	return cmd
}

func snapshotRows(t *table, snaps []*memoryv1.Snapshot) {
	t.header("snapshot", "agent", "created", "commit", "size", "runs", "stored at")
	for _, s := range snaps {
		t.row(s.GetSnapshotId(), s.GetAgentId(), s.GetCreatedAt(), shortSHA(s.GetGitCommit()), s.GetSize(), s.GetIncludeRuns(), s.GetStoredAt())
	}
}

func (c *cli) snapshotListCommand() *cobra.Command {
	var limit int32
	var pageToken string
	cmd := &cobra.Command{
		Use:     "list AGENT",
		Short:   "List an agent's snapshots (ListSnapshots)",
		Example: "  memctl snapshot list my-agent -o yaml",
		Args:    exactArgs(1, "AGENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.write.ListSnapshots(cmd.Context(), &memoryv1.ListSnapshotsRequest{AgentId: args[0], PageSize: limit, PageToken: pageToken})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				snapshotRows(t, resp.GetSnapshots())
				t.more(resp.GetNextPageToken())
			})
		},
	}
	cmd.Flags().Int32Var(&limit, "limit", 0, "page size")
	cmd.Flags().StringVar(&pageToken, "page-token", "", "the next page")
	return cmd
}

func (c *cli) snapshotRestoreCommand() *cobra.Command {
	var reasoning string
	cmd := &cobra.Command{
		Use:   "restore AGENT SNAPSHOT_ID",
		Short: "Propose putting a snapshot's files back (RestoreSnapshot)",
		Long: `Restore a snapshot: a proposal that puts the snapshot's files back, reviewed
and applied like any other (one commit).`,
		Example: `  memctl snapshot restore my-agent snapshot_before-refactor --reason "undo the import"`,
		Args:    exactArgs(2, "AGENT SNAPSHOT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.write.RestoreSnapshot(cmd.Context(), &memoryv1.RestoreSnapshotRequest{AgentId: args[0], SnapshotId: args[1], Reasoning: reasoning})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				p := resp.GetProposal()
				t.header("proposal", "agent", "status", "reason")
				t.row(p.GetProposalId(), p.GetAgentId(), t.status(short(p.GetStatus())), reasonText(p.GetReason()))
			})
		},
	}
	cmd.Flags().StringVar(&reasoning, "reason", "", "reasoning of the restore proposal")
	return cmd
}

func (c *cli) backupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "backup",
		Short: "Write a git bundle of the whole monorepo to the object store (CreateBackup, admin)",
		Example: `  memctl backup
  memctl backup -o json | jq -r .storedAt`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.clients(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := cl.write.CreateBackup(cmd.Context(), &memoryv1.CreateBackupRequest{})
			if err != nil {
				return err
			}
			return c.printer.message(resp, func(t *table) {
				t.kv("stored at", resp.GetStoredAt())
				t.kv("head", resp.GetHeadCommit())
				t.kv("bytes", resp.GetSizeBytes())
				t.kv("created", resp.GetCreatedAt())
			})
		},
	}
}
