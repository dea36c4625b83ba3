// Package models holds dpfl's trainable models: logistic regression and MLP
// (dense.go), the papers' (E)MNIST CNN and the federated-EMNIST CNN (cnn.go),
// and a next-word LSTM (lstm.go).
//
// Each model is a Gorgonia graph: Gorgonia builds and type-checks it and
// differentiates it symbolically (G.Grad). The ops are dpfl's own, with
// shapes fixed at build time (ops.go: dense layer, ReLU, dropout mask;
// conv.go: convolution as im2col + matrix product, max-pool; lstmops.go:
// embedding and the whole recurrent layer as one op; xent.go: softmax
// cross-entropy), each with its gradient ops. The compiled graph runs on
// dpfl's executor (exec.go), not Gorgonia's tape machine: buffers are
// allocated when a program first runs and shared by liveness, so a training
// step allocates nothing, and the tests check the executor against
// Gorgonia's tape machine bit for bit. The matrix products run on package
// models/internal/gemm (Go assembly for AVX-512 or AVX2+FMA, chosen at run
// time; pure Go elsewhere) unless built with the openblas tag
// (BLASBackend); elementwise work on package models/internal/vec.
//
// A Model is built once per worker and reused for every client that worker
// trains (no per-client rebuild). Grad runs the whole graph, writing the
// gradient straight into the caller's buffer; Eval runs the forward pass
// alone, and a model built for batches of more than evalRows rows evaluates
// them in chunks on a second graph sharing its parameters (eval.go).
// All parameters live in one flat float32 vector returned by Params; the
// graph's weight tensors are views into it, so copying a global model in or a
// delta out is a plain slice copy. Initial values are drawn from the caller's
// *rand.Rand (never Gorgonia's clock-seeded initializers).
//
// Batches have a fixed number of rows, set when the model is built; shorter
// batches are padded with zero-weight rows (see datasets.Batch).
//
// Reproducibility: each output of a matrix product is one fused
// multiply-add chain in a fixed order and the elementwise kernels repeat the
// Go code's operations, so results are the same for any worker count and on
// any x86-64 CPU with AVX2 (with or without AVX-512); without AVX2 the
// pure-Go product rounds differently (no fused multiply-add).
//
// Gorgonia v0.9.18 traps avoided here: its tape machine (allocates on every
// instruction, needs Reset after each run) is not used; gradients come from
// symbolic Grad nodes (not accumulating dual values); dropout masks are graph
// inputs drawn from dpfl's RNG (Gorgonia's Dropout seeds from the clock,
// scales its backward pass wrongly, and EvalMode reaches every machine of a
// graph); its LogSoftMax (wrong max subtraction) is replaced by xent.go.
//
// Models with dropout implement Stochastic (masks from the caller's RNG, or
// from a hash of batch and parameters). SGDStep is the local SGD update.
//
// The (E)MNIST CNN and the StackOverflow LSTM are those of Kairouz, McMahan, Song, Thakkar, Thakurta and Xu (2021), "Practical and
// Private (Deep) Learning Without Sampling or Shuffling", ICML 2021,
// arXiv:2103.00039 (Kairouz et al. 2021), Table 2.
//
// Package models imports datasets, gorgonia (with its tensor and hm
// packages), its internal gemm and vec packages (with the openblas tag,
// gonum's netlib instead of gemm) and the standard library.
package models
