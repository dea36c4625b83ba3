package privacy

import (
	"fmt"
	"strconv"
)

// Method names used in Guarantee.Method.
const (
	MethodExactGDP   = "exact-gdp"   // analytic Gaussian / GDP (Balle and Wang 2018)
	MethodRDPCKS     = "rdp-cks"     // RDP, Canonne-Kamath-Steinke (2020) conversion
	MethodRDPMironov = "rdp-mironov" // RDP, Mironov (2017) conversion
	MethodZCDP       = "zcdp"        // zCDP, rho + 2 sqrt(rho log(1/delta)) (Lee and Kifer 2018 Lemma 3.8)
	MethodZCDPCKS    = "zcdp-cks"    // zCDP as RDP alpha*rho, CKS conversion, optimal alpha
)

// Guarantee is an (Epsilon, Delta)-DP statement together with how it was
// obtained: Method is one of the Method constants, Order the Renyi order that
// attained the bound (0 when the method has no order).
type Guarantee struct {
	Epsilon, Delta float64
	Method         string
	Order          float64
	// Adjacency is the neighbouring relation the guarantee holds under
	// (AnyAdjacency when the events fixed none).
	Adjacency Adjacency
}

// String formats g as e.g. "ε = 2.314 at δ = 1e-05 (zcdp)" or, with an order
// and an adjacency, "ε = 7.329 at δ = 1e-05 (rdp-cks, order 9.5; add/remove)".
func (g Guarantee) String() string {
	// Four significant digits below 1 (0.8793), three decimals up to 1e6
	// (7.329, 18.195), exponent form above (1.78e+07).
	eps := strconv.FormatFloat(g.Epsilon, 'g', 4, 64)
	if g.Epsilon < 1e6 && (g.Epsilon >= 1 || eps == "1") {
		eps = strconv.FormatFloat(g.Epsilon, 'f', 3, 64)
	}
	how := g.Method
	if g.Order > 0 {
		how += fmt.Sprintf(", order %.4g", g.Order)
	}
	if g.Adjacency != AnyAdjacency {
		how += "; " + g.Adjacency.String()
	}
	return fmt.Sprintf("ε = %s at δ = %g (%s)", eps, g.Delta, how)
}
