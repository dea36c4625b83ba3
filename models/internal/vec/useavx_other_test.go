//go:build !amd64

package vec

var useAVX2, useAVX512 = false, false
