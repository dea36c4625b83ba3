// Package models holds dpfl's trainable models: models written as a list
// of layers (kind layers, the model section's key layers; layers.go,
// layertypes.go, layerapply.go, stack.go) and the kinds logistic regression
// and MLP (dense.go), the papers' (E)MNIST CNN and the federated-EMNIST CNN
// (cnn.go) and a next-word LSTM (lstm.go), each a preset of the same layer
// machinery (presets.go).
//
// # Layer lists
//
// A layer list is applied in order to the model's input (a classifier's
// row of dim values, read as channels × side × side channel-major by a
// first conv2d or pool; a sequence model's token ids) and ends in a head,
// the loss: xent (softmax cross-entropy of each example's class) or
// token-xent (of each token's next token, PAD targets weighted 0, scored
// without PAD, OOV and EOS; the list must then start with an embedding).
// The layer types and their keys: dense (units; unset: the classes), conv2d
// (filters, kernel, stride, padding), max-pool (2×2, stride 2), avg-pool
// (kernel, stride), flatten, dropout (rate), relu, tanh, gelu, layer-norm,
// group-norm (groups), embedding (dim), pos-embedding (a learned vector
// added per position), attention (heads: multi-head causal self-attention
// within each sequence), lstm (hidden), residual (layers: a sub-list whose
// output is added to its input, or to the output of the sub-list shortcut
// applied to the input when the block changes the shape, e.g. a strided
// 1×1 conv2d and a group-norm; a pre-norm transformer block is two:
// [layer-norm, attention] and [layer-norm, dense, gelu, dense]),
// global-avg-pool (the mean of each channel of a square image: c
// features). A key a type does not read
// must be unset. Shapes are inferred before the graph is built (planning
// pass, net.pass); a layer that does not fit its input is a LayerError
// naming the layer's key and type and both shapes. Images stay NHWC
// between layers (conv.go); flatten keeps that order.
//
// Tensor names: layer i's tensors are layers.<i>.<name> (a residual
// block's sub-lists: layers.<i>.layers.<j>.<name> and
// layers.<i>.shortcut.<j>.<name>), in list order, each
// list's layers in order and each layer's tensors in the order below (also
// the order of the initial draws). With the PyTorch module of the same
// layer, state_dict names and layouts map as:
//
//	dense      weight [in, units]            Linear.weight [units, in], transposed; bias [units] = Linear.bias
//	conv2d     weight [filters, k, k, in]    Conv2d.weight [filters, in, k, k], permuted (0, 2, 3, 1); bias = Conv2d.bias
//	embedding  weight [vocabulary, dim]      Embedding.weight
//	lstm       weight_ih [in, 4·hidden]      LSTM.weight_ih_l0 [4·hidden, in], transposed (gates i, f, g, o in both)
//	           weight_hh [hidden, 4·hidden]  LSTM.weight_hh_l0, transposed
//	           bias [4·hidden]               LSTM.bias_ih_l0 + LSTM.bias_hh_l0
//	pos-embedding weight [seq, width]        Embedding(seq, width).weight of the positions
//	attention  in_proj_weight [w, 3w]        MultiheadAttention.in_proj_weight [3w, w], transposed (q, k, v in both)
//	           in_proj_bias [3w]             MultiheadAttention.in_proj_bias
//	           out_proj.weight [w, w]        MultiheadAttention.out_proj.weight, transposed; out_proj.bias the same
//	layer-norm weight, bias [width]          LayerNorm.weight, LayerNorm.bias
//	group-norm weight, bias [channels]       GroupNorm.weight, GroupNorm.bias
//
// A flatten after convolutions orders features (row, column, channel),
// PyTorch's Flatten (channel, row, column): the first dense layer's rows
// are permuted accordingly. Initial values: dense and conv2d weights
// Glorot-uniform (conv fans in·k·k and out·k·k; the attention's input
// projection as one [w, 3w] matrix), embedding and positions U(−0.05, 0.05),
// lstm weights Glorot-uniform per gate block with the forget gate's bias
// 1, norms' gains 1, every other bias 0.
//
// A run can start from given weights (Spec.Init, the model section's key
// init: a safetensors file holding each tensor under these names and
// shapes) and freeze tensors (Spec.Freeze): a Trainable (trainable.go) is
// then the part of the flat vector that is trained, the vector the
// clipped updates, the noise and the server optimizer see.
//
// The presets keep their kinds' historical tensor names (W0, b0, conv0,
// emb, …; see Layered), so their runs and model.safetensors files are
// unchanged; a test builds each kind both ways (presets_test.go, against
// the hand-built networks the kinds were before, kept in
// handbuilt_test.go) and compares layouts, initial parameters, losses and
// gradients bit for bit.
//
// Each model is a Gorgonia graph: Gorgonia builds and type-checks it and
// differentiates it symbolically (G.Grad). The ops are dpfl's own, with
// shapes fixed at build time (ops.go: dense layer, ReLU, dropout mask;
// conv.go: convolution as im2col + matrix product, max-pool;
// convdirect.go: the forward pass and filter gradient reading patches in
// place from a padded copy of the input, with im2col's exact bits;
// lstmops.go:
// embedding and the whole recurrent layer as one op; xent.go: softmax
// cross-entropy; actops.go: tanh, GELU (float32, Φ by vec.Gelu), the
// sum of a residual block;
// normops.go: layer and group norm, average-pooling (global-avg-pool is
// one window over the whole image); attnops.go:
// positional embedding, causal self-attention), each with its gradient
// ops. The compiled graph runs on
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
