// Package experiments turns a YAML experiment description into a run: it
// decodes the configuration strictly (an unknown key, a value of the wrong
// type, a non-finite number, a non-integer or out-of-range integer, a key
// given twice, a second document or a missing required field is an error
// naming the key and its line), validates it centrally with every problem
// reported at once (sizes whose estimated memory is above the Limits
// included), fills defaults,
// calibrates the noise for a target epsilon, builds the runtime objects and
// runs them, writing results through package results.
//
// Adding an aggregator kind, a dataset, a model, a participation scheme, an
// availability, a server optimizer or an accountant touches no file of
// this package: decoding, defaults, validation, loading, planning, the
// memory estimate and the run ID read the registered kinds. Each is one
// file that registers it, in any package; a kind with new YAML keys also
// touches the config struct that holds them (aggregators/config.go,
// models/model.go, or AvailabilityConfig and ServerConfig here; a
// dataset's key struct stays in its file, datasets.Kind.Own);
// CONTRIBUTING.md walks through each.
//
// Papers cited by short name:
//   - Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta and Xu (2023),
//     "(Amplified) Banded Matrix Factorization: A unified approach to private
//     training", NeurIPS 2023, arXiv:2306.08153 (Choquette-Choo et al. 2023).
//   - Denisov, McMahan, Rush, Smith and Thakurta (2022), "Improved
//     Differential Privacy for SGD via Optimal Private Linear Operators on
//     Adaptive Streams", NeurIPS 2022, arXiv:2202.08312 (Denisov et al. 2022).
//
// Package experiments imports sim and everything sim is built from (datasets,
// models, clients, participation, aggregators, privacy) plus results; nothing
// imports it but cmd/dpfl.
package experiments

import (
	"dpfl/aggregators"
	"dpfl/datasets"
	"dpfl/models"
	"dpfl/participation"
)

// Config is one run's configuration, as written in YAML.
type Config struct {
	Name          string              `yaml:"name"`
	Seed          uint64              `yaml:"seed"`
	Rounds        int                 `yaml:"rounds"`
	Data          DataConfig          `yaml:"data"`
	Model         ModelConfig         `yaml:"model"`
	Client        ClientConfig        `yaml:"client"`
	Participation ParticipationConfig `yaml:"participation"`
	Aggregator    AggregatorConfig    `yaml:"aggregator"`
	Privacy       PrivacyConfig       `yaml:"privacy"`
	Server        ServerConfig        `yaml:"server"`
	Eval          EvalConfig          `yaml:"eval"`
	// Audit adds canary clients and writes an empirical epsilon estimate
	// (audit.json; see AuditConfig). Zero: no audit.
	Audit AuditConfig `yaml:"audit"`
}

// DataConfig chooses the dataset and how it is split into clients (see
// datasets.Config and datasets.Kinds).
type DataConfig = datasets.Config

// ModelConfig chooses the model: kind (see models.Kinds: logreg, mlp, cnn,
// cnn-large classify mnist images; lstm predicts the next word of the text
// datasets; layers is the list of layers given as layers) and its sizes
// (hidden, embed, proj; see models.Spec and models.Layer).
type ModelConfig = models.Spec

// ClientConfig is local training on each selected client.
type ClientConfig struct {
	Epochs      int     `yaml:"epochs"`
	BatchSize   int     `yaml:"batch_size"`
	LR          float64 `yaml:"lr"`
	MaxExamples int     `yaml:"max_examples"` // 0: all of the client's examples
}

// ParticipationConfig chooses which clients take part in each round: the
// schema the scheduler enforces, the cohort policy, and when clients are
// available.
type ParticipationConfig struct {
	// Kind is the schema: uniform (a cohort drawn at random each round, no
	// bound on participations), single (at most once per client), kb
	// ((k,b)-participation: b groups, round t uses group t mod b, at most k
	// times), minsep (b-min-sep: at least b rounds between participations,
	// at most k times), poisson (each client independently with
	// probability q; amplified accounting; needs availability always) or
	// kb-poisson (amplified BandMF, Choquette-Choo et al. 2023 §5: b random groups, round t
	// includes each client of group t mod b independently with probability
	// q; accounted as ⌈rounds/b⌉ compositions of a Poisson-sampled Gaussian;
	// needs availability always and aggregator dpfedavg or bandmf with at
	// most b bands, default b) or balls-in-bins (every client in a bin
	// drawn uniformly at random, b bins, round t trains all of bin t mod b;
	// no q, no cohort; needs availability always; a run composes the turns
	// unamplified, dpfl account -mechanism balls-in-bins gives the
	// amplified Monte Carlo epsilon).
	Kind         participation.Kind `yaml:"kind"`
	Cohort       int                `yaml:"cohort"`    // clients per round, also the fixed denominator (poisson: q × clients; kb-poisson: q × clients / b)
	K            int                `yaml:"k"`         // kb, minsep: most participations per client
	B            int                `yaml:"b"`         // kb, kb-poisson: number of groups; balls-in-bins: bins; minsep: least separation in rounds
	Q            float64            `yaml:"q"`         // poisson, kb-poisson: inclusion probability
	MaxWaits     int                `yaml:"max_waits"` // clock steps a round waits for more eligible clients before going short (at most participation.MaxWaits)
	Clock        ClockConfig        `yaml:"clock"`
	Availability AvailabilityConfig `yaml:"availability"`
}

// ClockConfig is the simulated time of the rounds.
type ClockConfig struct {
	StartHour    float64 `yaml:"start_hour"`    // UTC hour of day of round 0
	RoundMinutes float64 `yaml:"round_minutes"` // simulated duration of a round
	WaitMinutes  float64 `yaml:"wait_minutes"`  // one clock step while waiting for eligible clients
}

// AvailabilityConfig says when clients can take part.
type AvailabilityConfig struct {
	// Kind: always (every client, every round), diurnal (devices eligible
	// in daily windows, mostly at night in their own time zone), trace
	// (intervals read from File), or another registered by
	// RegisterAvailability.
	Kind        string           `yaml:"kind"`
	Zones       []TimeZoneConfig `yaml:"zones"`        // diurnal: time-zone distribution (empty: uniform over [-12, 12))
	PeakHour    float64          `yaml:"peak_hour"`    // diurnal: local hour of highest availability
	Peak        float64          `yaml:"peak"`         // diurnal: eligibility probability at the peak hour
	Trough      float64          `yaml:"trough"`       // diurnal: eligibility probability 12 hours from the peak
	WindowHours float64          `yaml:"window_hours"` // diurnal: length of an eligibility window
	File        string           `yaml:"file"`         // trace: CSV of client,start,end (simulated seconds); relative to the config file
}

// TimeZoneConfig is one entry of a time-zone distribution.
type TimeZoneConfig struct {
	Offset float64 `yaml:"offset"` // hours east of UTC
	Weight float64 `yaml:"weight"` // relative frequency
}

// AggregatorConfig chooses the DP aggregator: the kind, its own parameters
// and the noise (see aggregators.Config and aggregators.Kinds).
type AggregatorConfig = aggregators.Config

// PrivacyConfig is the privacy target and how epsilon is reported.
type PrivacyConfig struct {
	Epsilon *float64 `yaml:"epsilon"` // target; sigma is calibrated to meet it
	Delta   float64  `yaml:"delta"`   // required when private
	// Accountant: exact (analytic Gaussian / GDP; the default without
	// sampling), rdp (= rdp-cks; the default for poisson), rdp-mironov,
	// zcdp, zcdp-cks, pld, or another registered by
	// privacy.RegisterAccountant.
	Accountant string `yaml:"accountant"`
	// PopulationScale S > 1 simulates a population S times larger, whose
	// rounds have S times this cohort and the same participation pattern:
	// sigma is calibrated (or aggregator.noise_multiplier taken) for that
	// population, and the noise added to this run's sum is divided by S, so
	// the noise on the mean is what the larger population would see. This
	// is how the papers simulate large cohorts (Choquette-Choo et al. 2023 §4.3: 100 clients per
	// round calibrated for 1,000, sigma divided by 10). The guarantee of
	// this run's own clients (epsilon everywhere) is accounted at noise
	// multiplier sigma/S and is much weaker; the target is reported as
	// population_epsilon. Default 0 (off); not with poisson or kb-poisson
	// (their amplification depends on the population).
	PopulationScale float64 `yaml:"population_scale"`
	// AllowLargeDelta accepts a delta of at least 1/population (default
	// false: refused). Such a delta permits mechanisms that publish some
	// client's data outright, so the (epsilon, delta) it reports protects
	// nobody in particular; set it only to reproduce a paper that did so.
	AllowLargeDelta bool `yaml:"allow_large_delta"`
	// Amplification asks for amplified accounting and calibration where
	// the schedule supports it: sampling-without-replacement (a fixed-size
	// cohort drawn uniformly without replacement from the whole population,
	// independently each round: Wang, Balle and Kasiviswanathan 2019) for
	// dpfedavg under participation kind uniform with availability always,
	// accounted under replace-one adjacency by rdp (the default here) or
	// pld; the noise multiplier is then relative to the replace-one
	// sensitivity 2·clip. The realized schedule is checked (every round the
	// full cohort, every client eligible); anything else is refused with
	// the reason. Or balls-in-bins: under participation kind balls-in-bins
	// (each client in every turn of one uniformly random bin for the whole
	// run), a banded matrix mechanism (dpfedavg or bandmf;
	// C lower triangular, non-negative, at most b bands) is amplified by
	// the secrecy of the bins and accounted by Monte Carlo over its
	// dominating pair under zero-out adjacency (see the privacy package),
	// the epsilon labelled "monte-carlo, 99% confidence" and stated for
	// the whole run at every round; the noise multiplier is calibrated by
	// bisection with common random numbers and the reported epsilon
	// re-estimated from independent samples (privacy.accountant then only
	// accounts the unamplified reference that summary.json and dpfl
	// account print beside it). Default "" (off: unamplified
	// composition over each client's realized participations, zero-out
	// adjacency).
	Amplification string `yaml:"amplification,omitempty"`
	// MonteCarloSamples is the number of samples drawn from each side of
	// the dominating pair by privacy.amplification: balls-in-bins (0: the
	// default, ⌈4·log(2/(1−0.99))/δ⌉, 2.1 million at δ = 1e-5: four times
	// the fewest that can certify δ at all, which keeps the calibration of
	// a quickstart-size run to a few seconds; more samples give a smaller
	// epsilon for the same noise, at proportional cost). At most 1e7, and
	// samples·(b² + 6b) at most 2e10 (the work of one pass).
	MonteCarloSamples int `yaml:"monte_carlo_samples,omitempty"`
}

// The privacy.amplification values: amplification by sampling without
// replacement, and by balls-in-bins' secret bins.
const (
	AmplificationWOR = "sampling-without-replacement"
	AmplificationBIB = "balls-in-bins"
)

// ServerConfig is the server optimizer. Every optimizer is post-processing
// of the privatized updates: none changes the privacy accounting.
type ServerConfig struct {
	// Optimizer: sgd (the default: SGD with heavy-ball momentum), or the
	// adaptive optimizers of Reddi et al. 2021 (aggregators.ServerAdaptive):
	// adam, yogi, adagrad; or another registered by
	// aggregators.RegisterServerOptimizer.
	Optimizer string  `yaml:"optimizer"`
	LR        float64 `yaml:"lr"`
	Momentum  float64 `yaml:"momentum"` // sgd: heavy-ball momentum in [0, 1)
	// LRSchedule is the learning rate over the rounds: constant (the
	// default: lr every round), linear or cosine (the shape of the ramps: a
	// warmup from lr/warmup_rounds up to lr over the first warmup_rounds
	// rounds, and a cooldown from lr down to final_lr_fraction × lr, reached
	// in the last round, over the last cooldown_rounds rounds). The schedule
	// is post-processing: it never changes the privacy accounting.
	LRSchedule string `yaml:"lr_schedule"`
	// WarmupRounds (linear, cosine): rounds of warmup (default 0: none).
	WarmupRounds int `yaml:"warmup_rounds"`
	// CooldownRounds (linear, cosine): rounds of cooldown (default 0:
	// none). Warmup and cooldown must fit in the rounds together.
	CooldownRounds int `yaml:"cooldown_rounds"`
	// FinalLRFraction (with a cooldown): the learning-rate factor of the
	// last round, in [0, 1] (default 0.05, the cooldown of Denisov et al. 2022 as the
	// strategy reference losses use it).
	FinalLRFraction *float64 `yaml:"final_lr_fraction"`
	// Beta1 (adam, yogi, adagrad): the first-moment decay β₁ in [0, 1)
	// (default 0.9).
	Beta1 *float64 `yaml:"beta1"`
	// Beta2 (adam, yogi): the second-moment decay β₂ in [0, 1) (default
	// 0.99, Reddi et al.'s setting).
	Beta2 *float64 `yaml:"beta2"`
	// Tau (adam, yogi, adagrad): the adaptivity τ > 0 added to √v (and
	// v's initial value τ²; default 1e-3).
	Tau float64 `yaml:"tau"`
}

// EvalConfig is evaluation on the central test set. Accuracy is the share of
// correct predictions: of test images for the image models; for lstm, of the
// next-word predictions whose target is a vocabulary word (padding,
// out-of-vocabulary and end-of-document targets are not counted, as in the
// StackOverflow papers), and the test loss is averaged over the same tokens.
type EvalConfig struct {
	Every int `yaml:"every"` // evaluate every this many rounds (and after the last)
	Batch int `yaml:"batch"` // rows per evaluation batch
	// Validation is the share of the central test set held out as a
	// validation set (0, the default: none), drawn from the stream
	// ("eval/validation"). The run then reports its accuracy on that set
	// (summary.json final_val_accuracy) and its test accuracy on the rest
	// only, so hyperparameters chosen on the validation set are reported on
	// examples they were not chosen on.
	Validation float64 `yaml:"validation"`
}

// AuditConfig asks for an empirical privacy estimate with canary clients
// (Andrew et al. 2024; see audit.go).
type AuditConfig struct {
	// Canaries is the number of canary clients (0: no audit, the default):
	// half inserted, half held out.
	Canaries int `yaml:"canaries"`
	// Observe is the release the adversary observes, which is the headline
	// estimate's threat model: final (the final model only; the default) or
	// rounds (every round's aggregate).
	Observe string `yaml:"observe"`
}
