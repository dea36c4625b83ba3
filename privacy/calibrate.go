package privacy

import (
	"fmt"
	"math"
)

// Calibration search range for the noise multiplier.
const (
	calibrateMinSigma = 1e-6
	calibrateMaxSigma = 1e6
)

// Calibrate returns the smallest noise multiplier sigma in [1e-6, 1e6] for
// which the event factory(sigma), composed once into a fresh
// newAccountant(), certifies epsilon at delta, together with the guarantee
// achieved at that sigma. The answer is found by bisection on log sigma and is
// within relative tolerance relTol (0 < relTol < 1) of the exact threshold,
// always on the safe side: the returned sigma meets the target, sigma/(1+relTol)
// does not (unless sigma is the lower end of the range).
//
// It assumes the accountant's epsilon is non-increasing in sigma. Targets no
// sigma can reach (even sigma = 1e6 gives a larger epsilon, or the accountant
// cannot certify anything at delta) return an error naming the target.
func Calibrate(epsilon, delta float64, factory func(sigma float64) Event, newAccountant func() Accountant, relTol float64) (sigma float64, g Guarantee, err error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, Guarantee{}, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, Guarantee{}, err
	}
	if !(relTol > 0 && relTol < 1) {
		return 0, Guarantee{}, fmt.Errorf("privacy: calibration tolerance must be in (0, 1), got %g", relTol)
	}
	target := fmt.Sprintf("ε = %g at δ = %g", epsilon, delta)
	eval := func(s float64) (Guarantee, error) {
		a := newAccountant()
		if err := a.Compose(factory(s), 1); err != nil {
			return Guarantee{}, err
		}
		return a.Epsilon(delta)
	}
	meets := func(s float64) (bool, Guarantee, error) {
		g, err := eval(s)
		if err != nil {
			return false, g, err
		}
		return g.Epsilon <= epsilon, g, nil
	}

	// Bracket: hi meets the target, lo does not.
	hi := 1.0
	ok, ghi, err := meets(hi)
	if err != nil {
		return 0, Guarantee{}, fmt.Errorf("privacy: calibrating for %s: %w", target, err)
	}
	lo := hi
	if ok {
		for {
			lo = hi / 8
			if lo < calibrateMinSigma {
				lo = calibrateMinSigma
			}
			okLo, gLo, err := meets(lo)
			if err != nil {
				// The accountant cannot certify anything this small: treat as not met.
				break
			}
			if !okLo {
				break
			}
			hi, ghi = lo, gLo
			if lo == calibrateMinSigma {
				return hi, ghi, nil
			}
		}
	} else {
		var last Guarantee = ghi
		for !ok {
			lo = hi
			if hi == calibrateMaxSigma {
				return 0, Guarantee{}, fmt.Errorf("privacy: target %s unreachable: even σ = %g gives %v", target, hi, last)
			}
			hi = math.Min(hi*8, calibrateMaxSigma)
			ok, last, err = meets(hi)
			if err != nil {
				return 0, Guarantee{}, fmt.Errorf("privacy: calibrating for %s: %w", target, err)
			}
		}
		ghi = last
	}
	for hi/lo-1 > relTol {
		mid := math.Sqrt(lo * hi)
		ok, g, err := meets(mid)
		if err == nil && ok {
			hi, ghi = mid, g
		} else {
			lo = mid
		}
	}
	return hi, ghi, nil
}
