package datasets

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// A tf.train.Example is decoded straight from the protobuf wire format
// (tensorflow/core/example/{example,feature}.proto), without TensorFlow or
// generated code:
//
//	Example   { Features features = 1; }
//	Features  { map<string, Feature> feature = 1; }   // entries: key = 1, value = 2
//	Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
//	BytesList { repeated bytes value = 1; }
//	FloatList { repeated float value = 1 [packed = true]; }
//	Int64List { repeated int64 value = 1 [packed = true]; }
//
// Packed and unpacked encodings of the numeric lists are both accepted, as
// protobuf parsers must; unknown fields are skipped.

// Feature kinds of a tf.train.Feature.
const (
	featureNone  = 0
	featureBytes = 1
	featureFloat = 2
	featureInt64 = 3
)

var featureKindName = [...]string{"no value", "bytes_list", "float_list", "int64_list"}

// tfFeature is one decoded feature. Bytes values alias the decoded message.
type tfFeature struct {
	kind   int
	seen   bool
	bytes  [][]byte
	floats []float32
	ints   []int64
}

// exampleDecoder decodes the wanted features of tf.train.Example messages,
// reusing its buffers from one message to the next.
type exampleDecoder struct {
	names []string
	feats []tfFeature
}

func newExampleDecoder(names ...string) *exampleDecoder {
	return &exampleDecoder{names: names, feats: make([]tfFeature, len(names))}
}

// feature returns the decoded feature name (one of the decoder's names) of
// the last message, or an error naming it when it is absent or of another
// kind.
func (d *exampleDecoder) feature(name string, kind int) (*tfFeature, error) {
	for i, n := range d.names {
		if n != name {
			continue
		}
		f := &d.feats[i]
		switch {
		case !f.seen:
			return nil, fmt.Errorf("feature %q missing", name)
		case f.kind != kind:
			return nil, fmt.Errorf("feature %q is a %s, want a %s", name, featureKindName[f.kind], featureKindName[kind])
		}
		return f, nil
	}
	panic("datasets: feature " + name + " not decoded")
}

var errTruncated = errors.New("truncated or malformed protobuf")

// decode parses one serialized tf.train.Example.
func (d *exampleDecoder) decode(b []byte) error {
	for i := range d.feats {
		f := &d.feats[i]
		f.kind, f.seen = featureNone, false
		f.bytes, f.floats, f.ints = f.bytes[:0], f.floats[:0], f.ints[:0]
	}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType { // Example.features
			return nil
		}
		return eachField(v, func(num protowire.Number, typ protowire.Type, entry []byte) error {
			if num != 1 || typ != protowire.BytesType { // Features.feature (map entry)
				return nil
			}
			var (
				key   string
				value []byte
				has   bool
			)
			err := eachField(entry, func(num protowire.Number, typ protowire.Type, v []byte) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					key = string(v)
				case num == 2 && typ == protowire.BytesType:
					value, has = v, true
				}
				return nil
			})
			if err != nil {
				return err
			}
			for i, n := range d.names {
				if n == key {
					f := &d.feats[i]
					f.seen = true
					if !has {
						return nil
					}
					if err := f.decode(value); err != nil {
						return fmt.Errorf("feature %q: %w", key, err)
					}
				}
			}
			return nil
		})
	})
}

// decode parses a tf.train.Feature into f (the last list present wins, as
// for a protobuf oneof).
func (f *tfFeature) decode(b []byte) error {
	f.kind = featureNone
	f.bytes, f.floats, f.ints = f.bytes[:0], f.floats[:0], f.ints[:0]
	return eachField(b, func(num protowire.Number, typ protowire.Type, list []byte) error {
		if typ != protowire.BytesType || num < featureBytes || num > featureInt64 {
			return nil
		}
		f.kind = int(num)
		f.bytes, f.floats, f.ints = f.bytes[:0], f.floats[:0], f.ints[:0]
		return eachFieldRaw(list, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
			if num != 1 {
				return -1, nil
			}
			switch {
			case f.kind == featureBytes && typ == protowire.BytesType:
				v, n := protowire.ConsumeBytes(b)
				if n < 0 {
					return 0, errTruncated
				}
				f.bytes = append(f.bytes, v)
				return n, nil
			case f.kind == featureFloat && typ == protowire.Fixed32Type:
				v, n := protowire.ConsumeFixed32(b)
				if n < 0 {
					return 0, errTruncated
				}
				f.floats = append(f.floats, math.Float32frombits(v))
				return n, nil
			case f.kind == featureFloat && typ == protowire.BytesType:
				v, n := protowire.ConsumeBytes(b)
				if n < 0 || len(v)%4 != 0 {
					return 0, errTruncated
				}
				for k := 0; k < len(v); k += 4 {
					x, _ := protowire.ConsumeFixed32(v[k:])
					f.floats = append(f.floats, math.Float32frombits(x))
				}
				return n, nil
			case f.kind == featureInt64 && typ == protowire.VarintType:
				v, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return 0, errTruncated
				}
				f.ints = append(f.ints, int64(v))
				return n, nil
			case f.kind == featureInt64 && typ == protowire.BytesType:
				v, n := protowire.ConsumeBytes(b)
				if n < 0 {
					return 0, errTruncated
				}
				for len(v) > 0 {
					x, k := protowire.ConsumeVarint(v)
					if k < 0 {
						return 0, errTruncated
					}
					f.ints = append(f.ints, int64(x))
					v = v[k:]
				}
				return n, nil
			}
			return 0, fmt.Errorf("%s value of wire type %d", featureKindName[f.kind], typ)
		})
	})
}

// eachField calls fn with each field of message b; the value v of a
// length-delimited field is its content, of other fields their raw bytes.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	return eachFieldRaw(b, func(num protowire.Number, typ protowire.Type, rest []byte) (int, error) {
		if typ != protowire.BytesType {
			return -1, nil
		}
		v, n := protowire.ConsumeBytes(rest)
		if n < 0 {
			return 0, errTruncated
		}
		return n, fn(num, typ, v)
	})
}

// eachFieldRaw walks the fields of message b, calling fn with each field's
// number, type and the bytes from its value on; fn returns how many bytes the
// value took, or -1 to have it skipped.
func eachFieldRaw(b []byte, fn func(num protowire.Number, typ protowire.Type, rest []byte) (int, error)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		m, err := fn(num, typ, b)
		if err != nil {
			return err
		}
		if m < 0 {
			if m = protowire.ConsumeFieldValue(num, typ, b); m < 0 {
				return errTruncated
			}
		}
		b = b[m:]
	}
	return nil
}
