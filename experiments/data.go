package experiments

import (
	"context"
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
	return loadDataContext(context.Background(), cfg, opts, root)
}

// loadDataContext is loadData stopping with ctx's error once ctx is done.
func loadDataContext(ctx context.Context, cfg *Config, opts Options, root rng.Root) (*datasets.Federated, error) {
	if err := checkDataModel(ctx, cfg, opts); err != nil {
		return nil, err
	}
	f, err := cfg.Data.Resolved(opts.BaseDir).LoadContext(ctx, opts.data(), root)
	if err == nil && cfg.Data.DataTells() {
		if err := modelFits(cfg, f.Name, f.Train.Next != nil); err != nil {
			return nil, err
		}
	}
	return f, dataError(err)
}

// checkDataModel checks, for data whose files tell whether they hold images
// or text (a LEAF folder), that the model fits it, reading only the first
// example; dpfl run and dpfl account refuse the same configurations.
func checkDataModel(ctx context.Context, cfg *Config, opts Options) error {
	if !cfg.Data.DataTells() {
		return nil
	}
	name, text, err := cfg.Data.Resolved(opts.BaseDir).DataKind(ctx)
	if err != nil {
		return dataError(err)
	}
	return modelFits(cfg, name, text)
}

// modelFits refuses a text model on images and an image model on text.
func modelFits(cfg *Config, name string, text bool) error {
	var images, texts = false, true
	switch m := cfg.Model.Kind; {
	case cfg.Model.Text() && !text:
		return fmt.Errorf("experiments: model.kind: %s predicts the next token of text, but data.path holds %s images (use %s)", m, name, commaOr(models.KindNames(&images)))
	case !cfg.Model.Text() && text:
		return fmt.Errorf("experiments: model.kind: %s classifies images, but data.path holds %s text: use %s", m, name, commaOr(models.KindNames(&texts)))
	}
	return nil
}

// population returns the number of clients cfg.Data gives, reading as little
// as it can: none for iid and dirichlet (data.clients); only the QMNIST label
// files for the writer partition (the distinct writers); the whole corpus for
// the text datasets, whose population depends on de-duplication, the
// held-out split and data.min_tokens, so it is loaded as for a run.
func population(ctx context.Context, cfg *Config, opts Options, root rng.Root) (int, error) {
	if err := checkDataModel(ctx, cfg, opts); err != nil {
		return 0, err
	}
	n, err := cfg.Data.Resolved(opts.BaseDir).PopulationContext(ctx, opts.data(), root)
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
