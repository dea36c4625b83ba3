package results

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
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

// decodeAllocLimit bounds the bytes DecodeSafetensors may allocate for an
// input of n bytes: the values (twice the data: bytes, then floats), the
// decoded header (a shape's ints take up to 8 bytes each for 2 in the JSON,
// doubled by growing the slice) and a constant for the JSON decoder.
func decodeAllocLimit(n int) uint64 { return 32*uint64(n) + 256<<10 }

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// rawSafetensors is a file of the given header and data bytes.
func rawSafetensors(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// edited is good (a file EncodeSafetensors wrote) with old replaced by new in
// its header, the header length updated.
func edited(good []byte, old, repl string) []byte {
	n := binary.LittleEndian.Uint64(good)
	return rawSafetensors(strings.Replace(string(good[8:8+n]), old, repl, 1), good[8+n:])
}

// overlapping is a file of k tensors that all claim the same n bytes of
// data: a header sized for one tensor per values would allocate k times the
// file.
func overlapping(k, n int) []byte {
	var h strings.Builder
	h.WriteString("{")
	for i := 0; i < k; i++ {
		if i > 0 {
			h.WriteString(",")
		}
		fmt.Fprintf(&h, `"t%d":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}`, i, n/4, n)
	}
	h.WriteString("}")
	return rawSafetensors(h.String(), make([]byte, n))
}

// TestSafetensorsAllocationBounded: a file whose tensors overlap (each
// claiming all of the data) is refused before any tensor's values are
// allocated; a header claiming a tensor larger than the data is refused
// (its shape, not its offsets, is the lie).
func TestSafetensorsAllocationBounded(t *testing.T) {
	b := overlapping(200, 64<<10)
	var err error
	got := allocated(func() { _, _, err = DecodeSafetensors(b) })
	if err == nil || !strings.Contains(err.Error(), "overlap or gap") {
		t.Fatalf("overlapping tensors: %v", err)
	}
	if got > decodeAllocLimit(len(b)) {
		t.Fatalf("a %d-byte file allocated %d bytes (limit %d)", len(b), got, decodeAllocLimit(len(b)))
	}
	good, _ := EncodeSafetensors([]Tensor{{Name: "w", Shape: []int{2}, Data: []float32{1, 2}}}, nil)
	huge := edited(good, `[2]`, `[2500000000]`)
	if _, _, err := DecodeSafetensors(huge); err == nil || !strings.Contains(err.Error(), `tensor "w" has shape [2500000000]`) {
		t.Fatalf("a 10 GB shape in 8 data bytes: %v", err)
	}
}

// FuzzDecodeSafetensors: any bytes decode to tensors or an error, never a
// panic, allocating no more than decodeAllocLimit; what decodes re-encodes
// to a file that decodes to the same tensors. go test runs the seed corpus;
// .ci/run fuzzes it for a bounded number of inputs, longer runs by hand:
//
//	go test ./results -run '^$' -fuzz '^FuzzDecodeSafetensors$' -fuzztime 5m
func FuzzDecodeSafetensors(f *testing.F) {
	good, _ := EncodeSafetensors([]Tensor{{Name: "W0", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}, {Name: "b0", Shape: []int{2}, Data: []float32{5, 6}}}, map[string]string{"k": "v"})
	f.Add(good)
	f.Add(good[:20])
	f.Add(good[:len(good)-1])
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	for _, e := range [][2]string{
		{"[0,16]", "[0,99999999999]"},
		{"[2,2]", "[4611686018427387904,4]"},
		{"[2,2]", "[0,4611686018427387904,4611686018427387904]"},
		{"[2,2]", "[2,-2]"},
		{"[16,24]", "[0,8]"},
		{"[16,24]", "[12,20]"},
		{`"F32"`, `"F64"`},
		{`{"k":"v"}`, `{"k":1}`},
		{`"W0"`, `"__metadata__"`},
	} {
		f.Add(edited(good, e[0], e[1]))
	}
	f.Add(overlapping(3, 64))
	empty, _ := EncodeSafetensors([]Tensor{{Name: "e", Shape: []int{0, 3}, Data: []float32{}}, {Name: "s", Shape: []int{}, Data: []float32{7}}}, nil)
	f.Add(empty)
	f.Fuzz(func(t *testing.T, b []byte) {
		var ts []Tensor
		var meta map[string]string
		var err error
		if got := allocated(func() { ts, meta, err = DecodeSafetensors(b) }); got > decodeAllocLimit(len(b)) {
			t.Fatalf("a %d-byte input allocated %d bytes (limit %d)", len(b), got, decodeAllocLimit(len(b)))
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "results: "+errSafetensors) {
				t.Fatalf("error %q does not say what is wrong with the file", err)
			}
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
		for i := range ts {
			if ts2[i].Name != ts[i].Name || !slices.Equal(ts2[i].Shape, ts[i].Shape) || len(ts2[i].Data) != len(ts[i].Data) {
				t.Fatalf("tensor %d re-read as %s %v, was %s %v", i, ts2[i].Name, ts2[i].Shape, ts[i].Name, ts[i].Shape)
			}
		}
	})
}
