package cli

import (
	"slices"
	"time"

	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/lake"
)

// maintenanceHistory returns the runs on table that the maintenance plugin
// recorded under dataDir (lake.MaintenanceHistoryPath, one file per
// connector), oldest first, dry runs left out: its own record of what it
// did, which the table's snapshots show only in part (expiry drops
// snapshots, and failed runs commit none).
func maintenanceHistory(dataDir, table string) ([]MaintenanceRun, error) {
	files, err := lake.MaintenanceHistoryFiles(dataDir)
	if err != nil {
		return nil, err
	}
	runs := []MaintenanceRun{}
	for _, path := range files {
		records, _, err := lake.ReadMaintenanceHistory(path)
		if err != nil {
			return nil, err
		}
		for _, r := range records {
			if r.Table != table || r.DryRun {
				continue
			}
			runs = append(runs, worker.MaintenanceRunOf(r.TaskRun()))
		}
	}
	// Several connectors' files may name the table: interleave their runs.
	slices.SortStableFunc(runs, func(a, b MaintenanceRun) int { return a.Started.Compare(b.Started) })
	return runs, nil
}

// describeRuns is how many of the latest maintenance runs the text of
// `floe table describe` shows; --json has them all.
const describeRuns = 10

// printMaintenance prints the latest maintenance runs for people.
func printMaintenance(p *printer, runs []MaintenanceRun) {
	if len(runs) == 0 {
		p.printf("\nmaintenance: no runs recorded under the data dir\n")
		return
	}
	shown := runs[max(0, len(runs)-describeRuns):]
	p.printf("\nmaintenance (the last %d of %d runs recorded)\n", len(shown), len(runs))
	tw := p.columns()
	tw.printf("  started\ttask\ttrigger\ttook\tbefore → after\tresult\n")
	for _, r := range shown {
		result := clip(r.Detail, 100)
		if r.Error != "" {
			result = "FAILED: " + clip(r.Error, 100)
		}
		tw.printf("  %s\t%s\t%s\t%s\t%d → %d\t%s\n", r.Started.Format(time.RFC3339), r.Task, r.Trigger,
			r.Duration.Round(time.Millisecond), r.FilesBefore, r.FilesAfter, result)
	}
	tw.end()
}
