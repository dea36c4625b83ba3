package datasets

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// appendExample appends a serialized tf.train.Example holding the given
// features (test data and generated files; values are []float32, []int64,
// or []string / [][]byte), with the map entries in the order of names.
func appendExample(dst []byte, names []string, values []any) []byte {
	var feats []byte
	for i, name := range names {
		var list []byte
		var kind protowire.Number
		switch v := values[i].(type) {
		case []float32:
			kind = featureFloat
			packed := make([]byte, 0, 4*len(v))
			for _, x := range v {
				packed = protowire.AppendFixed32(packed, math.Float32bits(x))
			}
			list = protowire.AppendTag(list, 1, protowire.BytesType)
			list = protowire.AppendBytes(list, packed)
		case []int64:
			kind = featureInt64
			var packed []byte
			for _, x := range v {
				packed = protowire.AppendVarint(packed, uint64(x))
			}
			list = protowire.AppendTag(list, 1, protowire.BytesType)
			list = protowire.AppendBytes(list, packed)
		case []string:
			kind = featureBytes
			for _, s := range v {
				list = protowire.AppendTag(list, 1, protowire.BytesType)
				list = protowire.AppendString(list, s)
			}
		default:
			panic(fmt.Sprintf("datasets: appendExample: %T", v))
		}
		var feature []byte
		feature = protowire.AppendTag(feature, kind, protowire.BytesType)
		feature = protowire.AppendBytes(feature, list)
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, name)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, feature)
		feats = protowire.AppendTag(feats, 1, protowire.BytesType)
		feats = protowire.AppendBytes(feats, entry)
	}
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	return protowire.AppendBytes(dst, feats)
}
