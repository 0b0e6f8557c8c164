package fsck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/combmq/comb/analytics"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
)

// analyticsFile is the dashboard's saved series in <data>/meta
// (broker/maint_series.go).
const analyticsFile = "analytics"

// checkMaintenance reads <data>/meta/maintenance with meta.DecodeMaintenance,
// the server's decoder: a file that does not decode makes the server refuse
// to start (it is the only record of which pushed messages push maintenance
// still hides), so it is damage for a person (exit 2): move it aside to
// start with both modes off, and every held message visible.
func (c *checker) checkMaintenance() {
	rel := filepath.Join(dirMeta, meta.MaintenanceFile)
	data, err := os.ReadFile(filepath.Join(c.dir, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil {
		_, err = meta.DecodeMaintenance(data)
	}
	if err != nil {
		c.rep.add(Finding{Kind: KindMaintenanceCorrupt, Severity: SeverityDamaged, File: rel, EndByte: int64(len(data)),
			Detail: fmt.Sprintf("%v: the server refuses to start; moving the file aside starts it with both maintenance modes off and every message push maintenance held visible", err)})
	}
}

// checkAnalytics reads <data>/meta/analytics with analytics.Load, as the
// server's start-up does; a file that does not load is ignored there (the
// charts start blank, and the next minute's save replaces it), so it is
// information only (exit 0).
func (c *checker) checkAnalytics() {
	rel := filepath.Join(dirMeta, analyticsFile)
	path := filepath.Join(c.dir, rel)
	st, err := os.Stat(path)
	if err != nil {
		return
	}
	if _, err := analytics.Load(vfs.OS, path); err != nil {
		c.rep.add(Finding{Kind: KindAnalyticsIgnored, Severity: SeverityInfo, File: rel, EndByte: st.Size(),
			Detail: fmt.Sprintf("%v: the server ignores it at start: the dashboard's per-minute charts start blank and the next save replaces it (nothing else depends on it)", err)})
	}
}
