package models

import (
	"reflect"
	"unsafe"

	G "gorgonia.org/gorgonia"
)

// rewind readies a tape machine for its next run without dropping its
// registers (graphModel.keepRegisters).
//
// Gorgonia's Reset (v0.9.18) rewinds the program counter and also drops
// every register, so the next run allocates all intermediate tensors anew
// (about 1.3 MB per step for the 784-200-200-62 MLP at batch 64, 95% of the
// bytes allocated in training). The tape's alloc instruction reuses a register
// of the right type and shape, so keeping them is safe for graphs whose ops
// all overwrite their outputs (the dense models; not im2col, whose reused
// register indexes out of range). So rewind sets only the unexported program
// counter, found by name; if the machine is not a tape machine with such a
// field (another Gorgonia version), it falls back to Reset.
func rewind(vm G.VM) {
	v := reflect.ValueOf(vm)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		if f := v.Elem().FieldByName("pc"); f.IsValid() && f.Kind() == reflect.Int {
			*(*int)(unsafe.Pointer(f.UnsafeAddr())) = 0
			return
		}
	}
	vm.Reset()
}
