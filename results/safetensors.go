package results

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// TensorInfo is a tensor of a safetensors file as its header describes
// it: name, shape and the [Begin, End) byte range of its float32 values in
// the data that follows the header.
type TensorInfo struct {
	Name       string
	Shape      []int
	Begin, End int64
}

// Len is the number of values of the tensor.
func (t TensorInfo) Len() int { return int((t.End - t.Begin) / 4) }

// Safetensors is a safetensors file of float32 tensors whose header has
// been read and checked against the file's size (OpenSafetensors), before
// any tensor's values are: a caller checks the tensors it expects, then
// reads the values (Read), so a file can make it allocate no more than its
// own size.
type Safetensors struct {
	Path    string
	Tensors []TensorInfo // in the order of their data offsets, which leave no gap
	Meta    map[string]string
	r       io.ReaderAt
	data    int64 // offset of the data in r
	closer  io.Closer
}

// errSafetensors starts every format error.
const errSafetensors = "not a safetensors file of float32 tensors: "

// OpenSafetensors reads and checks the header of the safetensors file at
// path (a regular file: a device or FIFO is refused without blocking): the
// header length is bounded by the file's size, and every tensor's byte
// range by its data, before anything is allocated from them. Close it after
// use.
func OpenSafetensors(path string) (*Safetensors, error) {
	f, size, err := OpenRegular(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("results: %w", err)
		}
		return nil, err
	}
	st, err := decodeSafetensorsHeader(f, size)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("results: %s: %w", path, err)
	}
	st.Path, st.closer = path, f
	return st, nil
}

// Close closes the file.
func (s *Safetensors) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

// decodeSafetensorsHeader reads the header of the size bytes of r.
func decodeSafetensorsHeader(r io.ReaderAt, size int64) (*Safetensors, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf(errSafetensors+format, args...)
	}
	var lenBuf [8]byte
	if size < 8 {
		return nil, bad("%d bytes", size)
	}
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, bad("reading the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxSafetensorsHeader || n > uint64(size-8) {
		return nil, bad("header of %d bytes in a file of %d", n, size)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, bad("reading the header: %v", err)
	}
	dataLen := size - 8 - int64(n)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, bad("header: %v", err)
	}
	st := &Safetensors{r: r, data: 8 + int64(n)}
	for name, v := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(v, &st.Meta); err != nil {
				return nil, bad("__metadata__: %v", err)
			}
			continue
		}
		var e struct {
			Dtype   string  `json:"dtype"`
			Shape   []int   `json:"shape"`
			Offsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, bad("tensor %q: %v", name, err)
		}
		if e.Dtype != "F32" {
			return nil, bad("tensor %q has dtype %q", name, e.Dtype)
		}
		// count ≤ dataLen/4 at every step, so it cannot overflow.
		count := int64(1)
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && count > dataLen/4/int64(d)) {
				return nil, bad("tensor %q has shape %v, more values than the file's %d data bytes hold", name, e.Shape, dataLen)
			}
			count *= int64(d)
		}
		if len(e.Offsets) != 2 || e.Offsets[0] < 0 || e.Offsets[1] > dataLen || e.Offsets[1]-e.Offsets[0] != 4*count {
			return nil, bad("tensor %q of shape %v has offsets %v in %d data bytes", name, e.Shape, e.Offsets, dataLen)
		}
		st.Tensors = append(st.Tensors, TensorInfo{Name: name, Shape: e.Shape, Begin: e.Offsets[0], End: e.Offsets[1]})
	}
	ts := st.Tensors
	sort.Slice(ts, func(a, b int) bool {
		x, y := ts[a], ts[b]
		// Empty tensors first; the name orders tensors at the same bytes
		// (empty ones), whatever the header's order.
		return x.Begin < y.Begin || x.Begin == y.Begin && (x.End < y.End || x.End == y.End && x.Name < y.Name)
	})
	end := int64(0)
	for _, t := range ts {
		if t.Begin != end {
			return nil, bad("tensor %q starts at byte %d, not %d (overlap or gap)", t.Name, t.Begin, end)
		}
		end = t.End
	}
	if end != dataLen {
		return nil, bad("%d data bytes after the last tensor", dataLen-end)
	}
	return st, nil
}

// Read reads the values of every tensor. The tensors cover the file's data
// exactly (OpenSafetensors checked it), so the values take the file's size.
func (s *Safetensors) Read() ([]Tensor, error) {
	out := make([]Tensor, len(s.Tensors))
	for i, t := range s.Tensors {
		buf := make([]byte, t.End-t.Begin)
		if _, err := s.r.ReadAt(buf, s.data+t.Begin); err != nil {
			return nil, fmt.Errorf("results: %s: tensor %q: %v (the file changed while being read?)", s.Path, t.Name, err)
		}
		data := make([]float32, t.Len())
		for j := range data {
			data[j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*j:]))
		}
		out[i] = Tensor{Name: t.Name, Shape: t.Shape, Data: data}
	}
	return out, nil
}

// DecodeSafetensors reads a safetensors file of float32 tensors, returned in
// the order of their data offsets, with its metadata. It allocates no more
// than a small multiple of len(b).
func DecodeSafetensors(b []byte) ([]Tensor, map[string]string, error) {
	st, err := decodeSafetensorsHeader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, nil, fmt.Errorf("results: %w", err)
	}
	ts, err := st.Read()
	if err != nil {
		return nil, nil, err
	}
	return ts, st.Meta, nil
}

// ReadSafetensors reads a file written by WriteSafetensors (or any
// safetensors file of float32 tensors; see OpenSafetensors).
func ReadSafetensors(path string) ([]Tensor, map[string]string, error) {
	st, err := OpenSafetensors(path)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	ts, err := st.Read()
	if err != nil {
		return nil, nil, err
	}
	return ts, st.Meta, nil
}
