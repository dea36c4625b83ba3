//go:build !amd64

package vec

// Without assembly the Go loops do all the work.

func sumPAsm(acc []float64, x []float32) int                     { return 0 }
func sumSqDevPAsm(acc, mean []float64, x []float32) int          { return 0 }
func normPAsm(dst, x []float32, mean, scale []float64) int       { return 0 }
func affinePAsm(dst, x, gain, bias []float32) int                { return 0 }
func sumProdPAsm(su, suv []float64, u, v []float32) int          { return 0 }
func dotsPAsm(sh, shx []float64, g, gain, x []float32) int       { return 0 }
func gradXPAsm(dst, g, gain, x []float32, a, b, r []float64) int { return 0 }

func addStridedAsm(dst []float32, ds int, src []float32, ss, width, count int) int { return 0 }

func sumRowsAsm(acc, x []float32) int { return 0 }
