package results

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSafetensorsHandBuilt: a one-tensor file encodes to the bytes the
// format's specification gives, written out by hand here: the header
// length, the JSON header padded with spaces to a multiple of 8, then the
// little-endian float32 values.
func TestSafetensorsHandBuilt(t *testing.T) {
	got, err := EncodeSafetensors([]Tensor{{Name: "w", Shape: []int{2}, Data: []float32{1, -2}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	header := `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}` // 54 bytes
	header += strings.Repeat(" ", 2)                                   // padded to 56
	want := []byte{56, 0, 0, 0, 0, 0, 0, 0}
	want = append(want, header...)
	want = append(want, 0x00, 0x00, 0x80, 0x3f) // 1.0f
	want = append(want, 0x00, 0x00, 0x00, 0xc0) // -2.0f
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%q\nwant\n%q", got, want)
	}
}

// TestSafetensorsRoundTrip: tensors of every shape (scalar, vector, 4-d,
// empty) and awkward values (−0, NaN with a payload, infinities, the
// smallest subnormal) come back from the file bit for bit, in order, with
// the metadata; a changed value (negative control) does not compare equal.
func TestSafetensorsRoundTrip(t *testing.T) {
	nanPayload := math.Float32frombits(0x7fc00123)
	ts := []Tensor{
		{Name: "conv0", Shape: []int{2, 1, 2, 1}, Data: []float32{1.5, float32(math.Copysign(0, -1)), nanPayload, math.Float32frombits(1)}},
		{Name: "b0", Shape: []int{3}, Data: []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 0.1}},
		{Name: "scalar", Shape: []int{}, Data: []float32{42}},
		{Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
		{Name: "W1 \"quoted\"", Shape: []int{1, 2}, Data: []float32{3, 4}},
	}
	meta := map[string]string{"run_id": "abc", "note": "ε = 4"}
	path := filepath.Join(t.TempDir(), ModelFile)
	if err := WriteSafetensors(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	got, gotMeta, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	bits := func(v []float32) []uint32 {
		out := make([]uint32, len(v))
		for i, x := range v {
			out[i] = math.Float32bits(x)
		}
		return out
	}
	if len(got) != len(ts) {
		t.Fatalf("%d tensors back, wrote %d", len(got), len(ts))
	}
	for i := range ts {
		if got[i].Name != ts[i].Name || !slices.Equal(got[i].Shape, ts[i].Shape) || !slices.Equal(bits(got[i].Data), bits(ts[i].Data)) {
			t.Errorf("tensor %d: got %+v, wrote %+v", i, got[i], ts[i])
		}
	}
	if gotMeta["run_id"] != "abc" || gotMeta["note"] != "ε = 4" || len(gotMeta) != 2 {
		t.Errorf("metadata %v", gotMeta)
	}
	b, _ := EncodeSafetensors(ts, meta)
	if n := binary.LittleEndian.Uint64(b); (8+n)%8 != 0 {
		t.Errorf("data starts at byte %d, not 8-aligned", 8+n)
	}
	ts[1].Data[2] = 0.2
	if slices.Equal(bits(got[1].Data), bits(ts[1].Data)) {
		t.Fatal("negative control: a changed value compares equal")
	}
}

// TestSafetensorsRefused: malformed files and tensors are errors, never
// panics.
func TestSafetensorsRefused(t *testing.T) {
	good, _ := EncodeSafetensors([]Tensor{{Name: "w", Shape: []int{2}, Data: []float32{1, 2}}}, nil)
	bad := map[string][]byte{
		"short":     good[:5],
		"truncated": good[:len(good)-1],
		"huge header": func() []byte {
			b := slices.Clone(good)
			binary.LittleEndian.PutUint64(b, 1<<40)
			return b
		}(),
		"dtype":   []byte(strings.Replace(string(good), `"F32"`, `"F16"`, 1)),
		"offsets": []byte(strings.Replace(string(good), `[0,8]`, `[4,12]`, 1)),
		"json":    []byte(strings.Replace(string(good), `{"w"`, `["w"`, 1)),
	}
	for name, b := range bad {
		if _, _, err := DecodeSafetensors(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, ts := range [][]Tensor{
		{{Name: "w", Shape: []int{3}, Data: []float32{1, 2}}},
		{{Name: "w", Shape: []int{1}, Data: []float32{1}}, {Name: "w", Shape: []int{1}, Data: []float32{1}}},
		{{Name: "__metadata__", Shape: []int{1}, Data: []float32{1}}},
	} {
		if _, err := EncodeSafetensors(ts, nil); err == nil {
			t.Errorf("%+v encoded", ts)
		}
	}
}

// FuzzDecodeSafetensors: any bytes decode to tensors or an error, never a
// panic; what decodes re-encodes to a file that decodes to the same tensors.
func FuzzDecodeSafetensors(f *testing.F) {
	good, _ := EncodeSafetensors([]Tensor{{Name: "W0", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}, {Name: "b0", Shape: []int{2}, Data: []float32{5, 6}}}, map[string]string{"k": "v"})
	f.Add(good)
	f.Add(good[:20])
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	f.Add([]byte(strings.Replace(string(good), "[0,16]", "[0,99999999999]", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, meta, err := DecodeSafetensors(b)
		if err != nil {
			return
		}
		again, err := EncodeSafetensors(ts, meta)
		if err != nil {
			return // e.g. a tensor named "" that the encoder refuses
		}
		ts2, _, err := DecodeSafetensors(again)
		if err != nil || len(ts2) != len(ts) {
			t.Fatalf("re-encoded file: %v, %d tensors of %d", err, len(ts2), len(ts))
		}
	})
}
