package results

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
)

// ModelFile is the name of a completed run's final global model in its
// folder.
const ModelFile = "model.safetensors"

// Tensor is one named float32 tensor of a safetensors file, its values in
// row-major order.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// maxSafetensorsHeader bounds the JSON header a reader accepts (the
// reference implementation's limit is 100 MB).
const maxSafetensorsHeader = 100 << 20

// EncodeSafetensors returns the tensors in the safetensors format (the file
// PyTorch's and JAX's users load with the safetensors package): an 8-byte
// little-endian header length N, N bytes of JSON mapping each tensor's name
// to its dtype (F32), shape and [begin, end) byte offsets into the data,
// plus "__metadata__" (string to string), padded with spaces to a multiple
// of 8; then the tensors' raw little-endian float32 values, in the order
// given, with no gaps.
func EncodeSafetensors(ts []Tensor, meta map[string]string) ([]byte, error) {
	var h bytes.Buffer
	h.WriteByte('{')
	if len(meta) > 0 {
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				h.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			vb, _ := json.Marshal(meta[k])
			h.Write(kb)
			h.WriteByte(':')
			h.Write(vb)
		}
		h.WriteByte('}')
	}
	seen := map[string]bool{}
	off := 0
	for i, t := range ts {
		n := 1
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("results: tensor %q has a negative dimension in %v", t.Name, t.Shape)
			}
			n *= d
		}
		if n != len(t.Data) {
			return nil, fmt.Errorf("results: tensor %q of shape %v holds %d values", t.Name, t.Shape, len(t.Data))
		}
		if t.Name == "" || t.Name == "__metadata__" || seen[t.Name] {
			return nil, fmt.Errorf("results: tensor name %q is empty, reserved or repeated", t.Name)
		}
		seen[t.Name] = true
		if i > 0 || len(meta) > 0 {
			h.WriteByte(',')
		}
		nb, _ := json.Marshal(t.Name)
		shape := []byte("[")
		for j, d := range t.Shape {
			if j > 0 {
				shape = append(shape, ',')
			}
			shape = strconv.AppendInt(shape, int64(d), 10)
		}
		shape = append(shape, ']')
		fmt.Fprintf(&h, `%s:{"dtype":"F32","shape":%s,"data_offsets":[%d,%d]}`, nb, shape, off, off+4*n)
		off += 4 * n
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	out := make([]byte, 8, 8+h.Len()+off)
	binary.LittleEndian.PutUint64(out, uint64(h.Len()))
	out = append(out, h.Bytes()...)
	for _, t := range ts {
		for _, x := range t.Data {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
		}
	}
	return out, nil
}

// WriteSafetensors writes the tensors to path in the safetensors format
// (EncodeSafetensors), atomically.
func WriteSafetensors(path string, ts []Tensor, meta map[string]string) error {
	b, err := EncodeSafetensors(ts, meta)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b)
}

// DecodeSafetensors reads a safetensors file of float32 tensors, returned in
// the order of their data offsets, with its metadata.
func DecodeSafetensors(b []byte) ([]Tensor, map[string]string, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("results: not a safetensors file of float32 tensors: "+format, args...)
	}
	if len(b) < 8 {
		return nil, nil, bad("%d bytes", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxSafetensorsHeader || n > uint64(len(b)-8) {
		return nil, nil, bad("header of %d bytes in a file of %d", n, len(b))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		return nil, nil, bad("header: %v", err)
	}
	data := b[8+n:]
	var meta map[string]string
	var ts []Tensor
	var offs [][2]int
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &meta); err != nil {
				return nil, nil, bad("__metadata__: %v", err)
			}
			continue
		}
		var e struct {
			Dtype   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets []int  `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, nil, bad("tensor %q: %v", name, err)
		}
		if e.Dtype != "F32" {
			return nil, nil, bad("tensor %q has dtype %q", name, e.Dtype)
		}
		count := 1
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && count > len(data)/d) {
				return nil, nil, bad("tensor %q has shape %v", name, e.Shape)
			}
			count *= d
		}
		if len(e.Offsets) != 2 || e.Offsets[0] < 0 || e.Offsets[1] > len(data) || e.Offsets[1]-e.Offsets[0] != 4*count {
			return nil, nil, bad("tensor %q of shape %v has offsets %v in %d data bytes", name, e.Shape, e.Offsets, len(data))
		}
		t := Tensor{Name: name, Shape: e.Shape, Data: make([]float32, count)}
		for i := range t.Data {
			t.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[e.Offsets[0]+4*i:]))
		}
		ts = append(ts, t)
		offs = append(offs, [2]int{e.Offsets[0], e.Offsets[1]})
	}
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		x, y := offs[idx[a]], offs[idx[b]]
		return x[0] < y[0] || x[0] == y[0] && x[1] < y[1] // empty tensors first
	})
	sorted := make([]Tensor, len(ts))
	end := 0
	for i, j := range idx {
		sorted[i] = ts[j]
		if offs[j][0] != end {
			return nil, nil, bad("tensor %q starts at byte %d, not %d (overlap or gap)", ts[j].Name, offs[j][0], end)
		}
		end = offs[j][1]
	}
	if end != len(data) {
		return nil, nil, bad("%d data bytes after the last tensor", len(data)-end)
	}
	return sorted, meta, nil
}

// ReadSafetensors reads a file written by WriteSafetensors (or any
// safetensors file of float32 tensors).
func ReadSafetensors(path string) ([]Tensor, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("results: %w", err)
	}
	ts, meta, err := DecodeSafetensors(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, meta, nil
}
