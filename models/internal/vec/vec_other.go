//go:build !amd64

package vec

// Without assembly the Go loops do all the work.

func expAsm(dst, x []float32, shift float32) int                 { return 0 }
func sigmoidAsm(dst, x []float32) int                            { return 0 }
func tanhAsm(dst, x []float32) int                               { return 0 }
func reluAsm(dst, x []float32) int                               { return 0 }
func reluGradAsm(dst, y, g []float32) int                        { return 0 }
func addAsm(dst, x []float32) int                                { return 0 }
func mulAsm(dst, x, y []float32) int                             { return 0 }
func axpySubAsm(dst, g, p []float32, a float32, x []float32) int { return 0 }
func axpyAsm(dst []float32, a float32, x []float32) int          { return 0 }
func scaleAsm(dst []float32, a float32, x []float32) int         { return 0 }
func geluAsm(dst, x []float32) int                               { return 0 }
func geluGradAsm(dst, x, g []float32) int                        { return 0 }
func axpyRowsAsm(dst, x, a []float32, lda int, zero bool) int    { return 0 }
