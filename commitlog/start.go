package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// startName is the file that records the last truncation point: entries
// below it are not part of the log even while the file holding them stays
// (the newest file is never removed). One record frame (magic "CMWS") whose
// body is the LSN, u64 little-endian; replaced atomically.
const startName = "start"

var startFormat = record.NewFormat("CMWS", 8)

func writeStart(fsys vfs.FS, dir string, lsn LSN, noSync bool) error {
	return startFormat.WriteFile(fsys, filepath.Join(dir, startName), binary.LittleEndian.AppendUint64(nil, uint64(lsn)), noSync)
}

// readStart returns the recorded truncation point, 0 when there is none.
//
// Errors: ErrCorrupt for a file that does not verify (its truncation point
// is unknown, so entries the broker already dropped could be replayed).
func readStart(fsys vfs.FS, dir string) (LSN, error) {
	body, err := startFormat.ReadFile(fsys, filepath.Join(dir, startName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	case len(body) != 8:
		return 0, fmt.Errorf("%w: %s holds %d bytes", ErrCorrupt, startName, len(body))
	}
	return LSN(binary.LittleEndian.Uint64(body)), nil
}
