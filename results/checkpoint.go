package results

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// Checkpoint is a run's state after a completed round: enough to continue
// it with bit-identical results (the schedule, data and noise are
// regenerated from the seed).
type Checkpoint struct {
	RunID    string
	Round    int       // rounds completed
	Params   []float32 // global model
	Momentum []float64 // server optimizer state (nil: none)
	// Aggregator is the aggregator's own state (adaptive clipping: the
	// clip norm; nil: none). It is written after the other fields only when
	// present, so checkpoints without it are those of earlier versions.
	Aggregator  []float64
	FinalLoss   float64
	FinalAcc    float64
	BestAcc     float64
	WallSeconds float64 // training time spent before this checkpoint
}

// checkpointMagic starts every checkpoint file (format version 2). The
// version also stands for the models' parameter layout and arithmetic:
// version 1 was written by dpfl before its own matrix product and ops (other
// filter and gate layouts, another summation order), so its parameters
// cannot continue a run of today's code.
const checkpointMagic = "dpfl-ckpt-v2\n"

// oldCheckpointMagic is version 1's.
const oldCheckpointMagic = "dpfl-ckpt-v1\n"

// ErrBadCheckpoint reports a checkpoint file that is truncated, corrupt or
// of another run.
var ErrBadCheckpoint = errors.New("results: bad checkpoint")

// WriteCheckpoint writes c to path atomically. The file is the magic line,
// little-endian fields, and a SHA-256 of everything before it.
func WriteCheckpoint(path string, c *Checkpoint) error {
	var b bytes.Buffer
	b.WriteString(checkpointMagic)
	put := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	put(uint32(len(c.RunID)))
	b.WriteString(c.RunID)
	put(int64(c.Round))
	put([]float64{c.FinalLoss, c.FinalAcc, c.BestAcc, c.WallSeconds})
	put(int64(len(c.Params)))
	put(c.Params)
	put(int64(len(c.Momentum)))
	put(c.Momentum)
	if len(c.Aggregator) > 0 {
		put(int64(len(c.Aggregator)))
		put(c.Aggregator)
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return WriteFileAtomic(path, b.Bytes())
}

// ReadCheckpoint reads a checkpoint written by WriteCheckpoint. A truncated
// or corrupt file is an error wrapping ErrBadCheckpoint, and so is a device
// or FIFO (refused without blocking, see OpenRegular); a missing file is an
// error satisfying os.IsNotExist.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	return ReadCheckpointFor(path, -1)
}

// CheckpointMaxBytes bounds the size of the checkpoint of a model of
// params parameters: the parameters (float32), a server optimizer's state
// of up to two float64 values per parameter, and room for the run ID, the
// fields and an aggregator's few values.
func CheckpointMaxBytes(params int) int64 { return 1<<16 + 20*int64(params) }

// ReadCheckpointFor is ReadCheckpoint for a model of params parameters
// (negative: any): a larger file (CheckpointMaxBytes) is refused before it
// is read.
func ReadCheckpointFor(path string, params int) (*Checkpoint, error) {
	max := int64(math.MaxInt64)
	if params >= 0 {
		max = CheckpointMaxBytes(params)
	}
	data, err := ReadFileMax(path, max)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, err
		}
		return nil, fmt.Errorf("%w %s: %v", ErrBadCheckpoint, path, err)
	}
	bad := func(why string) error { return fmt.Errorf("%w %s: %s", ErrBadCheckpoint, path, why) }
	if bytes.HasPrefix(data, []byte(oldCheckpointMagic)) {
		return nil, bad("written by an older dpfl (format 1) whose model layout and arithmetic differ from today's")
	}
	if len(data) < len(checkpointMagic)+sha256.Size || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return nil, bad("not a dpfl checkpoint (format 2)")
	}
	body, tail := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], tail) {
		return nil, bad("checksum mismatch (truncated or corrupt)")
	}
	r := bytes.NewReader(body[len(checkpointMagic):])
	var c Checkpoint
	get := func(v any) {
		if err == nil {
			err = binary.Read(r, binary.LittleEndian, v)
		}
	}
	var n uint32
	get(&n)
	if err != nil || int64(n) > int64(r.Len()) {
		return nil, bad("bad run ID")
	}
	id := make([]byte, n)
	get(id)
	c.RunID = string(id)
	var round int64
	get(&round)
	c.Round = int(round)
	f := make([]float64, 4)
	get(f)
	c.FinalLoss, c.FinalAcc, c.BestAcc, c.WallSeconds = f[0], f[1], f[2], f[3]
	var np, nm int64
	get(&np)
	if err != nil || np < 0 || np*4 > int64(r.Len()) {
		return nil, bad("bad parameter count")
	}
	c.Params = make([]float32, np)
	get(c.Params)
	get(&nm)
	if err != nil || nm < 0 || nm*8 > int64(r.Len()) {
		return nil, bad("bad momentum length")
	}
	if nm > 0 {
		c.Momentum = make([]float64, nm)
		get(c.Momentum)
	}
	if err == nil && r.Len() > 0 {
		var na int64
		get(&na)
		if err != nil || na <= 0 || na*8 > int64(r.Len()) {
			return nil, bad("bad aggregator state length")
		}
		c.Aggregator = make([]float64, na)
		get(c.Aggregator)
	}
	if err != nil || r.Len() != 0 || c.Round < 0 || math.IsNaN(c.BestAcc) {
		return nil, bad("malformed fields")
	}
	return &c, nil
}
