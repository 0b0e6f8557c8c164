package meta

import (
	"errors"
	"reflect"
	"testing"
)

// The maintenance file round-trips, and every damage that record's frame
// or the entry count can see is ErrMaintenanceFile (what the broker refuses
// to start with and comb fsck reports as damage).
func TestMaintenanceFile(t *testing.T) {
	m := Maintenance{Push: true, Marks: map[[16]byte]uint64{{1}: 7, {2}: 9}}
	good := EncodeMaintenance(m)
	got, err := DecodeMaintenance(good)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("decoded %+v %v, want %+v", got, err, m)
	}
	flip := append([]byte(nil), good...)
	flip[20] ^= 1
	for name, data := range map[string][]byte{
		"flipped byte":  flip,
		"cut short":     good[:len(good)-1],
		"garbage after": append(append([]byte(nil), good...), 'x'),
		"empty":         {},
		"not a frame":   []byte("XXXXXXXXXXXXXXXXXXXXXXXX"),
	} {
		if _, err := DecodeMaintenance(data); !errors.Is(err, ErrMaintenanceFile) {
			t.Errorf("%s: %v, want ErrMaintenanceFile", name, err)
		}
	}
}

// FuzzDecodeMaintenance: any bytes decode or fail with ErrMaintenanceFile,
// never panic; what decodes encodes back to a file that decodes the same.
func FuzzDecodeMaintenance(f *testing.F) {
	f.Add(EncodeMaintenance(Maintenance{Push: true, Pop: true, Marks: map[[16]byte]uint64{{3}: 1}}))
	f.Add([]byte(maintV1Magic + "\x01\x03\x00\x00\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMaintenance(data)
		if err != nil {
			if !errors.Is(err, ErrMaintenanceFile) {
				t.Fatalf("error %v is not ErrMaintenanceFile", err)
			}
			return
		}
		again, err := DecodeMaintenance(EncodeMaintenance(m))
		if err != nil || again.Push != m.Push || again.Pop != m.Pop || len(again.Marks) != len(m.Marks) {
			t.Fatalf("round trip %+v -> %+v %v", m, again, err)
		}
	})
}

// EncodeMaintenance returns the file WriteMaintenance writes for m.
func EncodeMaintenance(m Maintenance) []byte {
	b, _ := maintFormat.Append(nil, maintBody(m)) // under MaxBody below 44M held partitions
	return b
}
