package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"

	"github.com/combmq/comb/record"
)

// Dedup file layout (docs/format.md section 4), little-endian:
//
//	header, 32 bytes: "CMBD" | version u8 = 3 | 3 reserved zero bytes | base u64
//	                  | 12 reserved zero bytes | u32 check
//	entry, 20 bytes:  xxhash64(transactionId) u64 | offset u64 | u32 check
//
// Base says where the file starts: every offset ≤ base is indexed by the
// sealed run files (run.go), and the file's entries have offsets > base. A
// reader that finds the runs ending below base knows a run is missing and
// re-indexes the gap from the segments instead of trusting the file.
//
// The header's check is CRC-32C (Castagnoli) of its bytes 0..27. An entry's
// check continues the CRC-32C from the check stored just before it (the
// header's for the first entry) over the entry's bytes 0..15, so when nothing
// is damaged each check is the CRC-32C of every data byte of the file up to
// it. A CRC detects every single-bit flip and every burst of up to 32 bits in
// what it covers; chaining it through the stored checks also catches entries
// that were dropped, repeated or reordered, while a damaged entry does not
// hide the entries after it (they still verify against the stored check),
// which is how damage is told from a torn tail.
const (
	DedupHeaderSize = 32
	DedupEntrySize  = 20
	// DedupVersion is the dedup file's format version. Versions 1 (16-byte
	// entries, no checks) and 2 (no base: the file held every entry of the
	// partition) are never read: such a file is rebuilt.
	DedupVersion = 3
)

var dedupMagic = [4]byte{'C', 'M', 'B', 'D'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Dedup file errors.
var (
	// ErrDedupVersion means the file is a dedup file of another version
	// (an older comb's): it is rebuilt from the segments, never read.
	ErrDedupVersion = errors.New("index: dedup file of another version")
	// ErrDedupHeader means the header is short, not a dedup header, or fails
	// its check (damage).
	ErrDedupHeader = errors.New("index: bad dedup file header")
)

// HashTxn is the dedup key of a transaction id: xxhash64 of its bytes, with
// 0 taken as 1 (Table keeps 0 for an empty slot; giving every reader the
// same key keeps the table, the run files and the filters in agreement).
func HashTxn(txid string) uint64 {
	if h := xxhash.Sum64String(txid); h != 0 {
		return h
	}
	return 1
}

// PutDedupHeader writes a dedup file header whose entries follow offset
// base into b[:DedupHeaderSize] and returns its check: the chain value the
// first entry continues.
func PutDedupHeader(b []byte, base uint64) (chain uint32) {
	clear(b[:DedupHeaderSize])
	copy(b, dedupMagic[:])
	b[4] = DedupVersion
	binary.LittleEndian.PutUint64(b[8:], base)
	chain = crc32.Checksum(b[:28], castagnoli)
	binary.LittleEndian.PutUint32(b[28:], chain)
	return chain
}

// CheckDedupHeader checks the header at the start of b and returns its
// check (the chain value of the first entry). Errors: ErrDedupVersion for a
// dedup file of another version, ErrDedupHeader (wrapped with what is wrong)
// for anything else.
func CheckDedupHeader(b []byte) (chain uint32, err error) {
	switch {
	case len(b) < DedupHeaderSize:
		return 0, fmt.Errorf("%w: %d of %d bytes", ErrDedupHeader, len(b), DedupHeaderSize)
	case [4]byte(b[:4]) != dedupMagic:
		return 0, fmt.Errorf("%w: magic %x", ErrDedupHeader, b[:4])
	case b[4] != DedupVersion:
		return 0, fmt.Errorf("%w: version %d, this comb reads %d", ErrDedupVersion, b[4], DedupVersion)
	}
	chain = binary.LittleEndian.Uint32(b[28:])
	if got := crc32.Checksum(b[:28], castagnoli); got != chain {
		return 0, fmt.Errorf("%w: check %08x, computed %08x", ErrDedupHeader, chain, got)
	}
	return chain, nil
}

// AppendDedupEntry appends one entry to dst, continuing the check chain from
// *chain and advancing it.
func AppendDedupEntry(dst []byte, chain *uint32, hash, offset uint64) []byte {
	at := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, hash)
	dst = binary.LittleEndian.AppendUint64(dst, offset)
	*chain = crc32.Update(*chain, castagnoli, dst[at:at+16])
	return binary.LittleEndian.AppendUint32(dst, *chain)
}

// dedupEntryAt decodes the entry at b[pos:] and reports whether its check
// verifies against prev (the check stored before it).
func dedupEntryAt(b []byte, pos int, prev uint32) (hash, offset uint64, check uint32, ok bool) {
	e := b[pos : pos+DedupEntrySize]
	hash = binary.LittleEndian.Uint64(e)
	offset = binary.LittleEndian.Uint64(e[8:])
	check = binary.LittleEndian.Uint32(e[16:])
	return hash, offset, check, crc32.Update(prev, castagnoli, e[:16]) == check
}

// DedupScan is what ScanDedup found in a dedup file.
type DedupScan struct {
	// Base is the header's base: the entries' offsets are above it.
	Base uint64
	// Entries is the number of verified entries from the start; End is where
	// they stop (header + Entries entries, in bytes): the valid prefix, and
	// where the next entry goes.
	Entries int
	End     int64
	// Chain is the check stored last in the valid prefix (the header's when
	// there is no entry): what the next entry continues.
	Chain uint32
	// Tail classifies what follows the valid prefix, in the words of package
	// record: TailClean (nothing), TailZeros (zero bytes only), TailTorn (a
	// partial entry), TailDamaged (a full-length entry that fails its check,
	// or whose offset does not increase, with no verified entry after it),
	// TailCorrupt (a verified entry follows the damage, at Resync: damage to
	// the file, not a torn append).
	Tail   record.Tail
	Resync int64  // TailCorrupt: byte position of the first verified entry after the damage; else -1
	Reason string // why the entry at End was not accepted ("" for TailClean and TailZeros)
}

// ScanDedup checks a whole dedup file (header included) and calls fn with
// each verified entry of its valid prefix, in file order (i counts from 0).
// An entry is verified when its check continues the chain and its offset is
// above the previous one (offsets strictly increase, from above the base). It never
// panics on any input. Errors: those of CheckDedupHeader; fn is then not
// called and the file must be rebuilt whole.
func ScanDedup(file []byte, fn func(i int, hash, offset uint64)) (DedupScan, error) {
	chain, err := CheckDedupHeader(file)
	if err != nil {
		return DedupScan{Resync: -1}, err
	}
	s := DedupScan{Chain: chain, Resync: -1, Base: binary.LittleEndian.Uint64(file[8:])}
	pos := DedupHeaderSize
	last := s.Base
	for ; pos+DedupEntrySize <= len(file); pos += DedupEntrySize {
		h, off, check, ok := dedupEntryAt(file, pos, s.Chain)
		if !ok {
			s.Reason = "entry check fails"
			break
		}
		if off <= last {
			s.Reason = fmt.Sprintf("offset %d after %d", off, last)
			break
		}
		if fn != nil {
			fn(s.Entries, h, off)
		}
		s.Entries++
		s.Chain, last = check, off
	}
	s.End = int64(pos)
	s.Tail = dedupTail(file, pos)
	if s.Tail == record.TailCorrupt {
		s.Resync = int64(dedupResync(file, pos+DedupEntrySize))
	}
	switch s.Tail {
	case record.TailClean, record.TailZeros:
		s.Reason = ""
	case record.TailTorn:
		s.Reason = fmt.Sprintf("partial entry (%d of %d bytes)", len(file)-pos, DedupEntrySize)
	}
	return s, nil
}

// dedupTail classifies the bytes from pos (the first entry that did not
// verify) to the end.
func dedupTail(file []byte, pos int) record.Tail {
	if pos >= len(file) {
		return record.TailClean
	}
	zeros := true
	for _, c := range file[pos:] {
		if c != 0 {
			zeros = false
			break
		}
	}
	switch {
	case zeros:
		return record.TailZeros
	case dedupResync(file, pos+DedupEntrySize) >= 0:
		return record.TailCorrupt
	case len(file)-pos < DedupEntrySize:
		return record.TailTorn
	}
	return record.TailDamaged
}

// dedupResync returns the position of the first entry at or after from (on
// the entry grid) whose check verifies against the check stored before it,
// or -1. Entries sit at fixed positions (the writer never appends after a
// partial entry: see package segment), so only the grid is searched.
func dedupResync(file []byte, from int) int {
	for pos := from; pos+DedupEntrySize <= len(file); pos += DedupEntrySize {
		prev := binary.LittleEndian.Uint32(file[pos-4:])
		if _, off, _, ok := dedupEntryAt(file, pos, prev); ok && off != 0 {
			return pos
		}
	}
	return -1
}

// DedupChainAt returns the check stored just before byte end of a file whose
// entries up to end verified (end = DedupHeaderSize + k·DedupEntrySize): the
// chain value an entry written at end continues. A writer that cuts the file
// back to end resumes the chain from it.
func DedupChainAt(file []byte, end int64) uint32 {
	return binary.LittleEndian.Uint32(file[end-4:])
}
