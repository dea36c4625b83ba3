package datasets_test

import (
	"fmt"

	"dpfl/datasets"
)

// A vocabulary of the two most frequent training words; a document becomes
// next-token windows of 4 positions (BOS=2, EOS=3, OOV=1, PAD=0).
func ExampleVocab_Encode() {
	train := [][]string{datasets.Tokenize("Fix the build. Fix the tests!"), datasets.Tokenize("Update the docs")}
	v := datasets.BuildVocab(train, 2)
	fmt.Println(v.Words)
	x, next := v.Encode(nil, nil, datasets.Tokenize("Fix the typo"), 4)
	fmt.Println(x)
	fmt.Println(next)
	// Output:
	// [the fix]
	// [2 5 4 1]
	// [5 4 1 3]
}
