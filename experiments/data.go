package experiments

import (
	"errors"
	"fmt"

	"dpfl/datasets"
	"dpfl/models"
	"dpfl/sim/rng"
)

// loadData builds the federated population that cfg.Data describes (see
// datasets.Config.Load and the datasets' Kinds), with file names resolved
// against opts.BaseDir (the config file's folder) and read with opts.Data.
// Errors name the configuration key they concern.
func loadData(cfg *Config, opts Options, root rng.Root) (*datasets.Federated, error) {
	f, err := cfg.Data.Resolved(opts.BaseDir).Load(opts.data(), root)
	if err == nil && cfg.Data.DataTells() {
		// A LEAF folder holds images or text: the model must fit it.
		var images, text = false, true
		switch m := cfg.Model.Kind; {
		case cfg.Model.Text() && f.Train.Next == nil:
			return nil, fmt.Errorf("experiments: model.kind: %s predicts the next token of text, but data.path holds %s images (use %s)", m, f.Name, commaOr(models.KindNames(&images)))
		case !cfg.Model.Text() && f.Train.Next != nil:
			return nil, fmt.Errorf("experiments: model.kind: %s classifies images, but data.path holds %s text: use %s", m, f.Name, commaOr(models.KindNames(&text)))
		}
	}
	return f, dataError(err)
}

// population returns the number of clients cfg.Data gives, reading as little
// as it can: none for iid and dirichlet (data.clients); only the QMNIST label
// files for the writer partition (the distinct writers); the whole corpus for
// the text datasets, whose population depends on de-duplication, the
// held-out split and data.min_tokens, so it is loaded as for a run.
func population(cfg *Config, opts Options, root rng.Root) (int, error) {
	n, err := cfg.Data.Resolved(opts.BaseDir).Population(opts.data(), root)
	return n, dataError(err)
}

// dataError names the data key an error of package datasets concerns.
func dataError(err error) error {
	var ke *datasets.KeyError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &ke):
		return err
	case ke.Key != "":
		return fmt.Errorf("experiments: data.%s: %w", ke.Key, ke.Err)
	}
	return fmt.Errorf("experiments: data (%s): %w", ke.What, ke.Err)
}
