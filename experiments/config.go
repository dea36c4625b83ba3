// Package experiments turns a YAML experiment description into a run: it
// decodes the configuration strictly (an unknown key, a value of the wrong
// type or a missing required field is an error naming the key and its line),
// validates it centrally with every problem reported at once, fills defaults,
// calibrates the noise for a target epsilon, builds the runtime objects and
// runs them, writing results through package results.
//
// Package experiments imports sim and everything sim is built from (datasets,
// models, clients, participation, aggregators, privacy) plus results; nothing
// imports it but cmd/dpfl.
package experiments

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
}

// DataConfig chooses the dataset and how it is split into clients.
type DataConfig struct {
	Dataset   string  `yaml:"dataset"`   // mnist
	Dir       string  `yaml:"dir"`       // folder with the dataset's files; empty: the default location
	Partition string  `yaml:"partition"` // iid | dirichlet
	Clients   int     `yaml:"clients"`   // population size
	Alpha     float64 `yaml:"alpha"`     // Dirichlet concentration (partition: dirichlet)
}

// ModelConfig chooses the model.
type ModelConfig struct {
	Kind   string `yaml:"kind"`   // logreg | mlp
	Hidden []int  `yaml:"hidden"` // hidden widths (mlp)
}

// ClientConfig is local training on each selected client.
type ClientConfig struct {
	Epochs      int     `yaml:"epochs"`
	BatchSize   int     `yaml:"batch_size"`
	LR          float64 `yaml:"lr"`
	MaxExamples int     `yaml:"max_examples"` // 0: all of the client's examples
}

// ParticipationConfig chooses which clients take part in each round.
type ParticipationConfig struct {
	Kind   string `yaml:"kind"`   // uniform
	Cohort int    `yaml:"cohort"` // clients per round (also the fixed denominator)
}

// AggregatorConfig chooses the DP aggregator.
type AggregatorConfig struct {
	Kind string  `yaml:"kind"` // dpfedavg
	Clip float64 `yaml:"clip"` // L2 bound on each client's delta
	// NoiseMultiplier is sigma relative to sensitivity 1: the noise std on the
	// sum is sigma · clip · sensitivity. Set it, or privacy.epsilon, not both;
	// 0 trains without privacy.
	NoiseMultiplier *float64 `yaml:"noise_multiplier"`
}

// PrivacyConfig is the privacy target and how epsilon is reported.
type PrivacyConfig struct {
	Epsilon    *float64 `yaml:"epsilon"`    // target; sigma is calibrated to meet it
	Delta      float64  `yaml:"delta"`      // required when private
	Accountant string   `yaml:"accountant"` // exact | rdp (= rdp-cks) | rdp-mironov | zcdp | zcdp-cks
}

// ServerConfig is the server optimizer.
type ServerConfig struct {
	Optimizer string  `yaml:"optimizer"` // sgd
	LR        float64 `yaml:"lr"`
	Momentum  float64 `yaml:"momentum"`
}

// EvalConfig is evaluation on the central test set.
type EvalConfig struct {
	Every int `yaml:"every"` // evaluate every this many rounds (and after the last)
	Batch int `yaml:"batch"` // rows per evaluation batch
}
